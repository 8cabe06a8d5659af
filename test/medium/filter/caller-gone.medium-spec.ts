import { AdminModule } from '../../../src/admin/admin.module';
import type { AuthenticatedAccount } from '../../../src/auth/authenticated-account';
import { BulkModule } from '../../../src/bulk/bulk.module';
import { BulkService } from '../../../src/bulk/bulk.service';
import type { Caller } from '../../../src/common/caller';
import { AppError } from '../../../src/common/errors';
import { SHED_RETRY_AFTER_SECONDS } from '../../../src/credits/caller-gate';
import { ChargeBatcher } from '../../../src/credits/charge-batcher';
import { CreditsRepository } from '../../../src/credits/credits.repository';
import { FilterModule } from '../../../src/filter/filter.module';
import { Metrics } from '../../../src/metrics/metrics';
import { LookupService } from '../../../src/provider/lookup.service';
import { RiskModule } from '../../../src/risk/risk.module';
import { RiskService } from '../../../src/risk/risk.service';
import { SettingsService } from '../../../src/settings/settings.service';
import { createAccount, TestAccount } from '../../factories/accounts';
import { eventually } from '../../helpers/eventually';
import { ledgerState } from '../../helpers/ledger';
import { Medium, startMedium } from '../medium';
import { CallOutcome, paidCalls } from '../paid-calls';

const DEADLINE_MS = 10_000;

/** A client the test controls: arrived now by the medium's clock, gone once `leave()` is called. */
function client(m: Medium): Caller & { leave(): void } {
  let gone = false;
  return { arrivedAt: m.clock.now(), gone: () => gone, leave: () => (gone = true) };
}

type Method = (...args: never[]) => unknown;

/** The next call of `service[method]` makes `caller` leave first: the call is then worked after its charge, its client gone. Returns the restore. */
function leaveAtNext<S extends object>(service: S, method: keyof S & string, caller: { leave(): void }): () => void {
  const methods = service as unknown as Record<string, Method>;
  const original = methods[method].bind(service);
  const spy = jest.spyOn(methods, method).mockImplementationOnce((...args) => {
    caller.leave();
    return original(...args);
  });
  return () => spy.mockRestore();
}

let numbers = 0;
/** A number nobody looked up yet (so its lookup is not answered from the cache), not one of the sandbox's test numbers. */
const freshNumber = () => `+4474001${String(20_000 + ++numbers * 7).padStart(5, '0')}`;

const asCaller = (account: TestAccount): AuthenticatedAccount => ({ accountId: account.id, keyId: 'medium-test', plan: { name: 'enterprise', limit: 1000, windowSeconds: 1 } });

/**
 * Issue 35 point 1: the charge is the point of no return, taken only for a caller who is still there.
 * Right before the statement that would charge it, a call whose client has gone is dropped (no charge,
 * no lookup) and one that waited past CALL_QUEUE_DEADLINE_MS is shed with 503 and Retry-After. The
 * old code charged both: the service noticed a gone client only while reading its body.
 */
describe('a paid call whose caller has gone or waited too long is not charged', () => {
  let m: Medium;
  let call: ReturnType<typeof paidCalls>;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, FilterModule, BulkModule, RiskModule], env: { CALL_QUEUE_DEADLINE_MS: String(DEADLINE_MS) } });
    call = paidCalls(m);
  });
  afterAll(() => m.close());

  const notCharged = async (reason: string): Promise<number> =>
    (await m.get(Metrics).registry.getSingleMetric('phone_filter_calls_not_charged_total')!.get()).values.find((value) => value.labels.reason === reason)?.value ?? 0;

  const costOf = async (account: TestAccount) => (await m.get(SettingsService).checksFor(account.id)).cost;

  /** Holds the account's row (as a long charge statement would) until the returned release is called. */
  async function holdAccount(account: TestAccount): Promise<() => Promise<void>> {
    const runner = m.db.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    await runner.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [account.id]);
    return async () => {
      await runner.commitTransaction();
      await runner.release();
    };
  }

  /**
   * Finding 1's reproduction without HTTP: the account's first call holds the charge statement (its row
   * locked elsewhere), the second waits in the queue behind it, and its client leaves meanwhile.
   */
  it('drops a call whose client leaves while it waits for its charge: no charge, no lookup, counted', async () => {
    const account = await createAccount(m, { credits: 10 });
    const release = await holdAccount(account);
    const statements = jest.spyOn(m.get(CreditsRepository), 'chargeMany');
    const lookups = jest.spyOn(m.get(LookupService), 'lookUp');
    const before = await notCharged('client_gone');
    let first: Promise<CallOutcome>;
    let second: Promise<CallOutcome>;
    const leaving = client(m);
    try {
      first = call(account, freshNumber(), { caller: client(m) });
      await eventually(() => statements.mock.calls.length, (n) => n === 1, 30_000);
      second = call(account, freshNumber(), { caller: leaving });
      expect(await eventually(() => m.get(ChargeBatcher).waiting(account.id), (n) => n === 1, 30_000)).toBe(1);
      leaving.leave();
    } finally {
      await release();
    }
    const [answered, dropped] = await Promise.all([first!, second!]);
    const lookedUp = lookups.mock.calls.map(([e164]) => e164);
    statements.mockRestore();
    lookups.mockRestore();
    expect(answered.ok).toBe(true);
    expect(dropped).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE' });
    expect(lookedUp).toHaveLength(1);
    const ledger = await ledgerState(m.db, account.id);
    expect(ledger.byType).toEqual({ TOPUP: 1, CHARGE: 1 });
    expect(ledger.balance).toBe(10 - (await costOf(account)));
    expect((await notCharged('client_gone')) - before).toBe(1);
  });

  it('drops a call whose client had gone before it reached the charge, and charges one still there', async () => {
    const account = await createAccount(m, { credits: 10 });
    const gone = client(m);
    gone.leave();
    expect(await call(account, freshNumber(), { caller: gone })).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE' });
    expect((await call(account, freshNumber(), { caller: client(m) })).ok).toBe(true);
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 10 - (await costOf(account)), byType: { TOPUP: 1, CHARGE: 1 } });
  });

  /**
   * A fault-suite run on a busy machine (paused-callers.e2e): the FIN of a client that had left was read
   * after its call passed the gate, and the call was charged and settled. Asked again at the settle,
   * the charge is given back instead; the old code settled it.
   */
  it('refunds, rather than settles, a call whose client leaves while it is worked (after its charge)', async () => {
    const account = await createAccount(m, { credits: 10 });
    const before = await notCharged('client_gone');
    const leaving = client(m);
    const restore = leaveAtNext(m.get(LookupService), 'lookUp', leaving);
    const outcome = await call(account, freshNumber(), { caller: leaving });
    restore();
    expect(outcome).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE', message: expect.stringContaining('its charge is refunded') });
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 10, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 } });
    expect(await m.db.query(`SELECT id FROM ledger_entries WHERE account_id = $1 AND type = 'CHARGE' AND settled_at IS NULL`, [account.id])).toEqual([]);
    expect((await notCharged('client_gone')) - before).toBe(1);

    const risk = m.get(RiskService);
    const leavingRisk = client(m);
    const restoreRisk = leaveAtNext(risk, 'verdictOf', leavingRisk);
    await expect(risk.verdict(asCaller(account), { phone: '+447400123456' }, undefined, leavingRisk)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    restoreRisk();
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 10, byType: { TOPUP: 1, CHARGE: 2, REFUND: 2 } });
  });

  it('frees the Idempotency-Key of a call refunded at its settle: a retry with the key is answered and charged once', async () => {
    const account = await createAccount(m, { credits: 10 });
    const phone = freshNumber();
    const leaving = client(m);
    const restore = leaveAtNext(m.get(LookupService), 'lookUp', leaving);
    expect(await call(account, phone, { key: 'left-mid-call', caller: leaving })).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE' });
    restore();
    const retry = await call(account, phone, { key: 'left-mid-call', caller: client(m) });
    expect(retry).toMatchObject({ ok: true, replayed: false });
    expect(await call(account, phone, { key: 'left-mid-call', caller: client(m) })).toMatchObject({ ok: true, replayed: true });
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 10 - (await costOf(account)), byType: { TOPUP: 1, CHARGE: 2, REFUND: 1 } });
  });

  it('sheds a call that waited past the queue deadline with 503 and Retry-After, uncharged; at the deadline it is charged', async () => {
    const account = await createAccount(m, { credits: 10 });
    const before = await notCharged('queue_deadline');
    const onTime = client(m);
    const late = client(m);
    m.clock.advance(DEADLINE_MS);
    expect((await call(account, freshNumber(), { caller: onTime })).ok).toBe(true);
    m.clock.advance(1);
    const shed = await call(account, freshNumber(), { caller: late });
    expect(shed).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE', message: expect.stringContaining('Nothing was charged') });
    expect(shed.ok === false && (shed.error as AppError).headers).toEqual({ 'Retry-After': String(SHED_RETRY_AFTER_SECONDS) });
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 10 - (await costOf(account)), byType: { TOPUP: 1, CHARGE: 1 } });
    expect((await notCharged('queue_deadline')) - before).toBe(1);
  });

  it('sheds a call whose deadline passes while it waits behind a held charge statement', async () => {
    const account = await createAccount(m, { credits: 10 });
    const release = await holdAccount(account);
    const statements = jest.spyOn(m.get(CreditsRepository), 'chargeMany');
    let first: Promise<CallOutcome>;
    let second: Promise<CallOutcome>;
    try {
      first = call(account, freshNumber(), { caller: client(m) });
      await eventually(() => statements.mock.calls.length, (n) => n === 1, 30_000);
      second = call(account, freshNumber(), { caller: client(m) });
      expect(await eventually(() => m.get(ChargeBatcher).waiting(account.id), (n) => n === 1, 30_000)).toBe(1);
      m.clock.advance(DEADLINE_MS + 1);
    } finally {
      await release();
    }
    statements.mockRestore();
    expect((await first!).ok).toBe(true);
    expect(await second!).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE' });
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 10 - (await costOf(account)), byType: { TOPUP: 1, CHARGE: 1 } });
  });

  it('reserves nothing for a bulk submission whose client has gone, and creates no job', async () => {
    const account = await createAccount(m, { credits: 10 });
    const gone = client(m);
    gone.leave();
    await expect(m.get(BulkService).submit(asCaller(account), { phones: ['+447400123456', '+447400123457'] }, undefined, gone)).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
    });
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 10, byType: { TOPUP: 1 } });
    expect(await m.db.query('SELECT id FROM bulk_jobs WHERE account_id = $1', [account.id])).toEqual([]);
    const late = client(m);
    m.clock.advance(DEADLINE_MS + 1);
    await expect(m.get(BulkService).submit(asCaller(account), { phones: ['+447400123456'] }, undefined, late)).rejects.toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      headers: { 'Retry-After': String(SHED_RETRY_AFTER_SECONDS) },
    });
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 10, byType: { TOPUP: 1 } });
  });

  it('charges no risk verdict for a client that has gone', async () => {
    const account = await createAccount(m, { credits: 10 });
    const gone = client(m);
    gone.leave();
    await expect(m.get(RiskService).verdict(asCaller(account), { phone: '+447400123456' }, undefined, gone)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 10, byType: { TOPUP: 1 } });
  });
});
