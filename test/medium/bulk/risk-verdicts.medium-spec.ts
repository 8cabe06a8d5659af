import { AdminModule } from '../../../src/admin/admin.module';
import { ErasureService } from '../../../src/admin/erasure.service';
import type { AuthenticatedAccount } from '../../../src/auth/authenticated-account';
import { BulkModule } from '../../../src/bulk/bulk.module';
import { BulkProcessor, ENTRY_LOOKUP_FAILED, ENTRY_VERDICT_FAILED } from '../../../src/bulk/bulk.processor';
import { BulkQueue, ChunkTask } from '../../../src/bulk/bulk-queue';
import { BulkService } from '../../../src/bulk/bulk.service';
import type { BulkRequestDto } from '../../../src/bulk/dto/bulk.dto';
import { AppError } from '../../../src/common/errors';
import { CountersUnavailable } from '../../../src/risk/counters/counter-store';
import { RiskCounters } from '../../../src/risk/counters/risk-counters';
import { RiskRecords } from '../../../src/risk/risk-records';
import { RiskStoreModule } from '../../../src/risk/risk-store.module';
import { LIST_EVENT, RiskVerdicts } from '../../../src/risk/risk-verdicts';
import { SettingsService } from '../../../src/settings/settings.service';
import { createAccount, TestAccount } from '../../factories/accounts';
import { csvRecords } from '../../helpers/bulk';
import { ledgerState } from '../../helpers/ledger';
import { Medium, startMedium } from '../medium';

const callerOf = (account: TestAccount): AuthenticatedAccount => ({ accountId: account.id, keyId: 'medium-test', plan: { name: 'enterprise', limit: 1000, windowSeconds: 1 } });

/** Sandbox prices: network_status (on by default) 4 credits; the risk verdict 2 (PRICE_RISK_VERDICT). */
const LOOKUP = 4;
const VERDICT = 2;

/**
 * Bulk jobs submitted with `risk: true` (docs/sms-pumping.md "Bulk jobs"): each entry's verdict, its
 * price and refunds on real PostgreSQL, with the risk counters of the run (Redis with REDIS_URL), and
 * an instance of its own with them in memory where the two stores must agree. No worker polls: the test
 * runs each chunk of a job as a worker would.
 */
describe('bulk jobs with the risk verdict per entry (sandbox provider)', () => {
  let m: Medium;
  let inMemory: Medium;
  let work: jest.SpyInstance;
  beforeAll(async () => {
    work = jest.spyOn(BulkQueue.prototype, 'work').mockResolvedValue(undefined);
    const env = { PROVIDER: 'sandbox', BULK_CHUNK_SIZE: '3' };
    m = await startMedium({ imports: [BulkModule, AdminModule, RiskStoreModule], env });
    inMemory = await startMedium({ imports: [BulkModule, AdminModule, RiskStoreModule], env: { ...env, REDIS_URL: '' }, joining: m });
  });
  afterAll(async () => {
    await inMemory?.close();
    await m?.close();
    work.mockRestore();
  });
  afterEach(() => jest.restoreAllMocks());

  const bulk = () => m.get(BulkService);

  /** Submits and runs every chunk of the job (each once, in order) on `on` (this file's instance unless told); the job as GET answers it. */
  async function runJob(account: TestAccount, request: BulkRequestDto, on: Medium = m) {
    const { job } = await on.get(BulkService).submit(callerOf(account), request);
    const chunks: Array<{ data: ChunkTask }> = await on.db.query(
      `SELECT data FROM ${on.config.bulk.queueSchema}.job WHERE name = $1 AND data->>'jobId' = $2 ORDER BY (data->>'chunk')::int`,
      [on.get(BulkQueue).chunkQueue, job.id],
    );
    for (const { data } of chunks) await on.get(BulkProcessor).processChunk(data);
    return { submitted: job, done: await on.get(BulkService).get(callerOf(account), job.id) };
  }

  const codes = (entry: { risk?: { reasons: Array<{ code: string }> } }) => entry.risk?.reasons.map((reason) => reason.code);

  it('gives each entry the verdict: a run of near-consecutive numbers and a premium-rate number block, scattered numbers pass; each billable entry costs its lookup and the verdict', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const run = ['+447400550120', '+447400550121', '+447400550122', '+447400550123'];
    const scattered = ['+447400987654', '+447555123789'];
    const premium = '+449098765432';
    const request = { phones: [...run, premium, ...scattered, '12345'], risk: true };

    expect(await bulk().quote(callerOf(account), request)).toMatchObject({ billable: 7, invalid: 1, cost: 7 * (LOOKUP + VERDICT) });
    const { submitted, done } = await runJob(account, request);
    expect(submitted.cost).toBe(7 * (LOOKUP + VERDICT));
    expect(done.status).toBe('completed');

    const [first, second, third, fourth, premiumEntry, legit1, legit2, invalid] = done.results;
    for (const entry of [first, second, third, fourth]) {
      expect(entry.result).toMatchObject({ status: 'CONNECTED' });
      expect(entry.risk).toMatchObject({ level: 'high', recommendation: 'block' });
      expect(codes(entry)).toEqual(expect.arrayContaining(['SEQUENTIAL_NUMBERS', 'RANGE_VELOCITY']));
    }
    // The route's own wording and numbers: 4 numbers within 30 consecutive ones (the list, asked at once).
    expect(first.risk!.reasons.find((reason) => reason.code === 'SEQUENTIAL_NUMBERS')!.message).toMatch(/^4 distinct numbers within 30 consecutive numbers/);
    expect(premiumEntry.risk).toMatchObject({ recommendation: 'block', reasons: [expect.objectContaining({ code: 'PREMIUM_RATE' })] });
    for (const entry of [legit1, legit2]) expect(entry.risk).toEqual({ score: 0, level: 'low', recommendation: 'allow', reasons: [] });
    expect(invalid).toEqual({ phone: '12345', error: expect.objectContaining({ code: 'INVALID_REQUEST' }) });
    expect(invalid).not.toHaveProperty('risk');

    // Charged once for the job, nothing refunded: balance = ledger sum.
    expect(await ledgerState(m.db, account.id)).toEqual({ balance: 1000 - 42, ledgerSum: 1000 - 42, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });

    const csv = csvRecords(await bulk().csv(callerOf(account), submitted.id));
    expect(csv.header.slice(-4)).toEqual(['risk_score', 'risk_level', 'risk_recommendation', 'risk_reasons']);
    expect(csv.rows[4]).toMatchObject({ phone: premium, risk_level: 'high', risk_recommendation: 'block', risk_reasons: 'PREMIUM_RATE' });
    expect(Number(csv.rows[4].risk_score)).toBe(premiumEntry.risk!.score);
    expect(csv.rows[5]).toMatchObject({ risk_score: '0', risk_level: 'low', risk_recommendation: 'allow', risk_reasons: '' });
    expect(csv.rows[7]).toMatchObject({ phone: '12345', error_code: 'INVALID_REQUEST', risk_score: '', risk_level: '', risk_reasons: '' });
  });

  it('a job without it is unchanged: the lookup price only, no verdict, no risk columns', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const { submitted, done } = await runJob(account, { phones: ['+447400550220', '+447400550221', '+447400550222'] });
    expect(submitted.cost).toBe(3 * LOOKUP);
    for (const entry of done.results) expect(Object.keys(entry)).toEqual(['phone', 'result', 'answered_by']);
    const csv = csvRecords(await bulk().csv(callerOf(account), submitted.id));
    expect(csv.header.filter((column) => column.startsWith('risk_'))).toEqual([]);
  });

  it('reads the live counters without feeding them: a range the route saw busy shows in the list; the list adds nothing the route sees, and takes no feedback', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const verdicts = m.get(RiskVerdicts);
    const ask = (e164: string) => verdicts.ofAsk(account.id, { e164, source: 'signup-form', event: 'signup', ip: null });
    // Four sign-ups of one 10,000-number range, far apart within it (no block, no run).
    for (const e164 of ['+447400660111', '+447400661222', '+447400662333', '+447400663444']) await ask(e164);

    const run = ['+447400770130', '+447400770131', '+447400770132', '+447400770133'];
    const { done } = await runJob(account, { phones: ['+447400665555', ...run], source: 'signup-form', risk: true });
    expect(codes(done.results[0])).toEqual(['RANGE_VELOCITY']);
    // The four asks and the listed number itself, as the route counts its own ask.
    expect(done.results[0].risk!.reasons[0].message).toMatch(/^Asked for 5 distinct numbers of the range \+44740066… from this source within an hour/);
    for (const entry of done.results.slice(1)) expect(codes(entry)).toContain('SEQUENTIAL_NUMBERS');

    // The route, after the job: the list's run and range count for nothing.
    expect(await ask('+447400770134')).toEqual({ score: 0, level: 'low', recommendation: 'allow', reasons: [] });
    expect((await ask('+447400664444')).reasons.find((reason) => reason.code === 'RANGE_VELOCITY')!.message).toMatch(/^Asked for 5 distinct numbers/);
    // No ask was recorded for a listed number, so no feedback attaches to it.
    expect(await m.get(RiskRecords).feedback(account.id, run[0], true)).toBe(false);
  });

  it.each([
    ['Redis', '+44740067'],
    ['memory', '+44740068'],
  ])("flags a listed number as the route flags its next ask: one ask short of the range's threshold, then the number (counters in %s)", async (kind, range) => {
    const on = kind === 'memory' ? inMemory : m;
    const account = await createAccount(m, { credits: 1000 });
    const verdicts = on.get(RiskVerdicts);
    const ask = (e164: string) => verdicts.ofAsk(account.id, { e164, source: 'signup-form', event: 'signup', ip: null });
    const threshold = (await on.get(SettingsService).riskFor(account.id)).thresholds.range_velocity_hour;
    // Far apart within the range (no block, no run): only the range's velocity can flag.
    for (let i = 0; i < threshold - 1; i++) await ask(`${range}${String(i).repeat(4)}`);

    const listed = `${range}9999`;
    const { done } = await runJob(account, { phones: [listed], source: 'signup-form', risk: true }, on);
    // The job fed nothing, so the route's ask now is the next one it would have seen, with the list's event.
    const route = await verdicts.ofAsk(account.id, { e164: listed, source: 'signup-form', event: LIST_EVENT, ip: null });
    expect(route.reasons.map((reason) => reason.code)).toEqual(['RANGE_VELOCITY']);
    expect(route.reasons[0].message).toMatch(new RegExp(`^Asked for ${threshold} distinct numbers of the range \\${range}… from this source within an hour \\(threshold ${threshold}\\)`));
    expect(done.results[0].risk).toEqual(route);
  });

  it('erasure takes the verdict with the number: its entries keep no risk, in the results and the CSV; the other entries keep theirs', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const erased = '+447400590111';
    const kept = ['+447400591222', '+447400592333'];
    const jobs = [await runJob(account, { phones: [erased, ...kept], risk: true }), await runJob(account, { phones: [kept[0], erased], risk: true })];
    for (const { done } of jobs) for (const entry of done.results) expect(entry.risk).toEqual(expect.objectContaining({ recommendation: expect.any(String) }));
    const csvBefore = await Promise.all(jobs.map(({ submitted }) => bulk().csv(callerOf(account), submitted.id).then(csvRecords)));

    await m.get(ErasureService).erase(erased);

    const stored = async (jobId: string) =>
      m.db.query(`SELECT idx, risk IS NULL AS "riskGone" FROM bulk_entries WHERE job_id = $1 ORDER BY idx`, [jobId]) as Promise<Array<{ idx: number; riskGone: boolean }>>;
    expect(await stored(jobs[0].submitted.id)).toEqual([
      { idx: 0, riskGone: true },
      { idx: 1, riskGone: false },
      { idx: 2, riskGone: false },
    ]);
    expect(await stored(jobs[1].submitted.id)).toEqual([
      { idx: 0, riskGone: false },
      { idx: 1, riskGone: true },
    ]);

    const erasedAt = [0, 1];
    for (const [j, { submitted, done: before }] of jobs.entries()) {
      const after = await bulk().get(callerOf(account), submitted.id);
      const csv = csvRecords(await bulk().csv(callerOf(account), submitted.id));
      after.results.forEach((entry, i) => {
        if (i === erasedAt[j]) {
          expect(entry).not.toHaveProperty('risk');
          expect(entry.phone).not.toBe(erased);
          expect(csv.rows[i]).toMatchObject({ risk_score: '', risk_level: '', risk_recommendation: '', risk_reasons: '' });
        } else {
          expect(entry).toEqual(before.results[i]);
          expect(csv.rows[i]).toEqual(csvBefore[j].rows[i]);
        }
      });
    }
  });

  it('an entry whose verdict cannot be made fails SERVICE_UNAVAILABLE and is refunded whole, once, like a failed lookup', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const counters = m.get(RiskCounters);
    const observe = counters.observe.bind(counters);
    jest.spyOn(counters, 'observe').mockImplementation((ask, options) =>
      ask.e164 === '+447400881111' ? Promise.reject(new CountersUnavailable('Redis unreachable (test)')) : observe(ask, options),
    );
    // 0003 is the sandbox's failing number.
    const { submitted, done } = await runJob(account, { phones: ['+447400880003', '+447400881111', '+447400882222'], risk: true });
    expect(done.results).toEqual([
      { phone: '+447400880003', error: { code: 'PROVIDER_UNAVAILABLE', message: ENTRY_LOOKUP_FAILED } },
      { phone: '+447400881111', error: { code: 'SERVICE_UNAVAILABLE', message: ENTRY_VERDICT_FAILED } },
      expect.objectContaining({ phone: '+447400882222', risk: expect.objectContaining({ recommendation: 'allow' }) }),
    ]);
    expect(done).toMatchObject({ cost: 18, charged: 18, refunded: 12 });
    // The refund says what failed: entries, not only lookups.
    expect(await m.db.query(`SELECT reason FROM ledger_entries WHERE account_id = $1 AND type = 'REFUND'`, [account.id])).toEqual([{ reason: `bulk job ${submitted.id}: 2 entries failed` }]);
    // Run again (a crash, a second worker): nothing more is refunded.
    await m.get(BulkProcessor).processChunk({ jobId: submitted.id, chunk: 0, accountId: account.id });
    expect(await ledgerState(m.db, account.id)).toEqual({ balance: 1000 - 6, ledgerSum: 1000 - 6, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
  });

  it('402 at submission when the balance covers the lookups but not the verdicts: no job, nothing charged', async () => {
    const account = await createAccount(m, { credits: 10 });
    const phones = ['+447400990111', '+447400991222'];
    expect(await bulk().quote(callerOf(account), { phones, risk: true })).toMatchObject({ cost: 12, balance: 10, sufficient: false });
    expect(await bulk().quote(callerOf(account), { phones })).toMatchObject({ cost: 8, sufficient: true });
    const refused = await bulk().submit(callerOf(account), { phones, risk: true }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).code).toBe('INSUFFICIENT_CREDITS');
    expect(await m.db.query(`SELECT id FROM bulk_jobs WHERE account_id = $1`, [account.id])).toEqual([]);
    expect(await ledgerState(m.db, account.id)).toEqual({ balance: 10, ledgerSum: 10, byType: { TOPUP: 1 }, unsettledCharges: 0 });
  });
});
