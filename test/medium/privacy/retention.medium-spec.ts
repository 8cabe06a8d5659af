import { AdminModule } from '../../../src/admin/admin.module';
import { BulkPrivacyRepository } from '../../../src/bulk/bulk-privacy.repository';
import { storedFormHash } from '../../../src/common/number-hash';
import { maskPhone } from '../../../src/common/phone';
import { CreditsService } from '../../../src/credits/credits.service';
import { IdempotencyRepository } from '../../../src/idempotency/idempotency.repository';
import { RetentionModule } from '../../../src/privacy/retention.module';
import { RetentionScheduler } from '../../../src/privacy/retention.scheduler';
import { RetentionCounts, RetentionService } from '../../../src/privacy/retention.service';
import { createAccount, TestAccount } from '../../factories/accounts';
import { ledgerState } from '../../helpers/ledger';
import { Medium, startMedium } from '../medium';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * The retention periods of docs/privacy.md, each at its boundary: the rows are written once, then the
 * clock moves to just before each store's period (an hour short: nothing of that store goes) and just
 * past it (everything of it goes), and every run is two runs at once on the real pool (two instances),
 * in batches of 2 rows. Money is never touched.
 */
describe('retention: each store lets go of numbers after its period by the clock, in bounded batches, safely twice at once', () => {
  let m: Medium;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, RetentionModule], env: { RETENTION_BATCH_SIZE: '2' } });
  });
  afterAll(() => m.close());

  const count = async (sql: string, params: unknown[] = []): Promise<number> => (await m.db.query(`SELECT count(*)::int AS n FROM ${sql}`, params))[0].n;
  /**
   * Two instances' runs at once, again until a round deletes nothing, as the scheduler's next rounds
   * would: a run may stop with rows left when the other instance's batch held them with an older
   * snapshot (a CI run left 2 of 4 bulk entries to the next round). The sum of every round.
   */
  const runTwiceAtOnce = async (): Promise<RetentionCounts> => {
    const now = m.clock.date();
    const retention = m.get(RetentionService);
    const total: RetentionCounts = {};
    for (;;) {
      const runs = await Promise.all([retention.runOnce(now), retention.runOnce(now)]);
      let round = 0;
      for (const name of Object.keys(runs[0])) {
        total[name] = (total[name] ?? 0) + runs[0][name] + runs[1][name];
        round += runs[0][name] + runs[1][name];
      }
      if (round === 0) return total;
    }
  };
  const done = (counts: RetentionCounts) => Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0));
  const advanceTo = (at: number) => m.clock.advance(Math.max(0, at - m.clock.now()));
  const money = (account: TestAccount) =>
    m.db.query(`SELECT id, type, amount, balance_after, reference, refund_of, settled_at FROM ledger_entries WHERE account_id = $1 ORDER BY id`, [account.id]);

  it('is a job on the scheduler every RETENTION_INTERVAL_SECONDS whose step counts from the clock', async () => {
    expect(m.jobs.everyMs(RetentionScheduler.JOB)).toBe(m.config.retention.intervalSeconds * 1000);
    expect(await m.jobs.run(RetentionScheduler.JOB)).toMatchObject({ bulk_entries: 0, ledger_phones_masked: 0, idempotency_keys: 0, admin_audit: 0 });
  });

  it('keys, bulk entries, watchlist entries and changes, ledger phones and audit rows go each after its period, not before; money untouched', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const credits = m.get(CreditsService);

    // An Idempotency-Key and the charge made with it; a second charge; both ledger rows hold a whole
    // number (as rows written before charges were masked).
    const key = (await m.get(IdempotencyRepository).claim(account.id, 'retention-key', 'f'.repeat(64)))!;
    const charges = [
      await credits.charge(account.id, 4, { reference: `charge:retention-1-${account.id}`, phone: '+447400201001', source: 'retention', idempotencyKeyId: key.id }),
      await credits.charge(account.id, 4, { reference: `charge:retention-2-${account.id}`, phone: '+447400201002', source: 'retention' }),
    ];
    const chargeIds = charges.map((charge) => charge.id);
    await m.db.query(`UPDATE ledger_entries SET phone = CASE id WHEN $1 THEN '+447400201001' ELSE '+447400201002' END WHERE id = ANY($2::bigint[])`, [chargeIds[0], chargeIds]);

    // A completed bulk job of 4 entries (its counts stay; only its entries go).
    const [oldJob]: Array<{ id: string }> = await m.db.query(
      `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, csv_layout, source, chunks, completed_at)
       VALUES (gen_random_uuid(), $1, 'completed', 4, 4, 0, 0, 0, '[]', '{"answer":[],"answered_by":[]}', 'retention-test', 1, now()) RETURNING id`,
      [account.id],
    );
    // Written as the service writes them, with their keyed hash (rows from before it: the last test).
    const oldPhones = [0, 1, 2, 3].map((i) => `+44740020200${i}`);
    await m.db.query(
      `INSERT INTO bulk_entries (job_id, idx, phone, chunk, result, done_at, phone_hash)
       SELECT $1, i - 1, phones[i], 0, '{"valid":true}', now(), hashes[i] FROM generate_series(1, 4) AS i, (SELECT $2::text[] AS phones, $3::text[] AS hashes) p`,
      [oldJob.id, oldPhones, oldPhones.map((phone) => storedFormHash(m.config.dataHashKey, phone))],
    );

    // Watchlists: one kept, with an entry removed now and a live one (each with a change) and a finished
    // round; one deleted now, with its entry; a creation answer kept for a retry of its key.
    const [kept]: Array<{ id: string }> = await m.db.query(
      `INSERT INTO watchlists (id, account_id, name, interval, next_check_at, schedule_group, creation_answer)
       VALUES (gen_random_uuid(), $1, 'kept', 'daily', now() + interval '1 day', 'retention', '{"rejected":["07400 203009"]}') RETURNING id`,
      [account.id],
    );
    const [gone]: Array<{ id: string }> = await m.db.query(
      `INSERT INTO watchlists (id, account_id, name, interval, next_check_at, schedule_group, status, deleted_at)
       VALUES (gen_random_uuid(), $1, 'gone', 'daily', now(), 'retention', 'deleted', now()) RETURNING id`,
      [account.id],
    );
    // A watchlist deleted by a version before deleted_at existed: its period starts when retention first sees it.
    const [undated]: Array<{ id: string }> = await m.db.query(
      `INSERT INTO watchlists (id, account_id, name, interval, next_check_at, schedule_group, status)
       VALUES (gen_random_uuid(), $1, 'undated', 'daily', now(), 'retention', 'deleted') RETURNING id`,
      [account.id],
    );
    await m.db.query(
      `INSERT INTO watchlist_entries (watchlist_id, phone, removed_at)
       VALUES ($1, '+447400203001', now()), ($1, '+447400203002', NULL), ($2, '+447400204001', NULL), ($3, '+447400205001', NULL)`,
      [kept.id, gone.id, undated.id],
    );
    await m.db.query(
      `INSERT INTO watchlist_changes (watchlist_id, entry_id, round, phone, field, before, after)
       SELECT watchlist_id, id, 1, phone, 'status', '"CONNECTED"', '"ABSENT"' FROM watchlist_entries WHERE watchlist_id = $1`,
      [kept.id],
    );
    await m.db.query(`INSERT INTO watchlist_rounds (watchlist_id, round, trigger, cost_per_number, completed_at) VALUES ($1, 1, 'schedule', 4, now())`, [kept.id]);

    // An audit row (the credits given).
    await m.admin.changeCredits(account.id, 1, 'retention test', 'test');

    // Every row above is stamped by the database at or before `written`; the periods count from there.
    const [{ written }]: Array<{ written: Date }> = await m.db.query(`SELECT clock_timestamp() AS written`);
    const base = written.getTime() + 1;
    expect(m.clock.now()).toBeLessThan(base + 48 * HOUR_MS - HOUR_MS);
    const moneyBefore = await money(account);

    // The key: its 24 h life and 24 h grace (RETENTION_IDEMPOTENCY_GRACE_HOURS); the creation answer with it.
    await advanceTo(base + 48 * HOUR_MS - HOUR_MS);
    const datedAt = m.clock.now();
    expect(done(await runTwiceAtOnce())).toEqual({ watchlist_deletions_dated: 1 });
    expect(await m.db.query(`SELECT deleted_at FROM watchlists WHERE id = $1`, [undated.id])).toEqual([{ deleted_at: new Date(datedAt) }]);
    await advanceTo(base + 48 * HOUR_MS + 60_000);
    expect(done(await runTwiceAtOnce())).toEqual({ idempotency_keys: 1, watchlist_creation_answers: 1 });
    expect(await count(`idempotency_keys WHERE account_id = $1`, [account.id])).toBe(0);
    // The charge stays, naming no key.
    expect(await m.db.query(`SELECT idempotency_key_id FROM ledger_entries WHERE id = $1`, [chargeIds[0]])).toEqual([{ idempotency_key_id: null }]);
    expect(await m.db.query(`SELECT creation_answer FROM watchlists WHERE id = $1`, [kept.id])).toEqual([{ creation_answer: null }]);

    // A second bulk job, completed now (by the clock): when the first job's entries go, it keeps its own.
    const newJobAt = m.clock.now();
    const [newJob]: Array<{ id: string }> = await m.db.query(
      `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, csv_layout, source, chunks, completed_at)
       VALUES (gen_random_uuid(), $1, 'completed', 1, 1, 0, 0, 0, '[]', '{"answer":[],"answered_by":[]}', 'retention-test', 1, $2) RETURNING id`,
      [account.id, m.clock.date()],
    );
    await m.db.query(`INSERT INTO bulk_entries (job_id, idx, phone, chunk, result, done_at, phone_hash) VALUES ($1, 0, '+447400202009', 0, '{"valid":true}', now(), $2)`, [
      newJob.id,
      storedFormHash(m.config.dataHashKey, '+447400202009'),
    ]);

    // Bulk entries (RETENTION_BULK_ENTRIES_DAYS) and removed or deleted watchlist entries with their changes (RETENTION_WATCHLIST_REMOVED_DAYS).
    await advanceTo(base + 30 * DAY_MS - HOUR_MS);
    expect(done(await runTwiceAtOnce())).toEqual({});
    await advanceTo(base + 30 * DAY_MS + 60_000);
    expect(done(await runTwiceAtOnce())).toEqual({ bulk_entries: 4, watchlist_changes_of_gone_entries: 1, watchlist_gone_entries: 2 });
    expect(await count(`bulk_entries WHERE job_id = $1`, [oldJob.id])).toBe(0);
    expect(await count(`bulk_entries WHERE job_id = $1`, [newJob.id])).toBe(1);
    expect(await m.db.query(`SELECT status, total, processed, entries_deleted_at IS NOT NULL AS emptied FROM bulk_jobs WHERE id = $1`, [oldJob.id])).toEqual([
      { status: 'completed', total: 4, processed: 4, emptied: true },
    ]);
    expect(await m.db.query(`SELECT phone FROM watchlist_entries WHERE watchlist_id = ANY($1::uuid[])`, [[kept.id, gone.id]])).toEqual([{ phone: '+447400203002' }]);
    expect(await count(`watchlist_entries WHERE watchlist_id = $1`, [undated.id])).toBe(1); // dated 47 h later
    expect(await count(`watchlist_changes WHERE watchlist_id = $1`, [kept.id])).toBe(1);
    // ...until their own 30 days have passed.
    await advanceTo(datedAt + 30 * DAY_MS - HOUR_MS);
    expect(done(await runTwiceAtOnce())).toEqual({});
    await advanceTo(datedAt + 30 * DAY_MS + 1);
    expect(done(await runTwiceAtOnce())).toEqual({ watchlist_gone_entries: 1 });
    await advanceTo(newJobAt + 30 * DAY_MS + 60_000);
    expect(done(await runTwiceAtOnce())).toEqual({ bulk_entries: 1 });

    // Ledger phones (RETENTION_LEDGER_PHONE_DAYS): masked; amounts, references, balances exactly as before.
    await advanceTo(base + 90 * DAY_MS - HOUR_MS);
    expect(done(await runTwiceAtOnce())).toEqual({});
    await advanceTo(base + 90 * DAY_MS + 60_000);
    expect(done(await runTwiceAtOnce())).toEqual({ ledger_phones_masked: 2 });
    const phones = await m.db.query(`SELECT phone FROM ledger_entries WHERE id = ANY($1::bigint[]) ORDER BY id`, [chargeIds]);
    expect(phones).toEqual([{ phone: maskPhone('+447400201001') }, { phone: maskPhone('+447400201002') }]);

    // The live entry's change and the finished round (RETENTION_WATCHLIST_CHANGES_DAYS, _ROUNDS_DAYS).
    await advanceTo(base + 365 * DAY_MS - HOUR_MS);
    expect(done(await runTwiceAtOnce())).toEqual({});
    await advanceTo(base + 365 * DAY_MS + 60_000);
    expect(done(await runTwiceAtOnce())).toEqual({ watchlist_changes: 1, watchlist_rounds: 1 });
    expect(await count(`watchlist_changes WHERE watchlist_id = $1`, [kept.id])).toBe(0);
    expect(await m.db.query(`SELECT phone FROM watchlist_entries WHERE watchlist_id = $1`, [kept.id])).toEqual([{ phone: '+447400203002' }]);

    // The audit trail (RETENTION_ADMIN_AUDIT_DAYS): every row written before `base` (this account's and the file's).
    const audit = await count(`admin_audit WHERE created_at < $1`, [new Date(base)]);
    expect(audit).toBeGreaterThanOrEqual(2); // the account's creation and its credits
    await advanceTo(base + 400 * DAY_MS - HOUR_MS);
    expect(done(await runTwiceAtOnce())).toEqual({});
    await advanceTo(base + 400 * DAY_MS + 60_000);
    expect(done(await runTwiceAtOnce())).toEqual({ admin_audit: audit });
    expect(await count(`admin_audit WHERE created_at < $1`, [new Date(base)])).toBe(0);

    expect(await money(account)).toEqual(moneyBefore);
    const state = await ledgerState(m.db, account.id, { waitForSettlement: false });
    expect(state.balance).toBe(state.ledgerSum);
    // Nothing left to do.
    expect(done(await runTwiceAtOnce())).toEqual({});
  });

  it('30 expired jobs of 3 entries all go in one run, no statement deleting more than the batch size', async () => {
    const batchSize = 10;
    const account = await createAccount(m, { credits: 0 });
    // 30 finished jobs of 3 entries, completed now by the clock (written directly: 30 real jobs would only be slower).
    const jobs: Array<{ id: string }> = await m.db.query(
      `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, csv_layout, source, chunks, completed_at)
       SELECT gen_random_uuid(), $1, 'completed', 3, 3, 0, 0, 0, '[]', '{"answer":[],"answered_by":[]}', 'retention-test', 1, $2 FROM generate_series(1, 30) RETURNING id`,
      [account.id, m.clock.date()],
    );
    const ids = jobs.map((job) => job.id);
    await m.db.query(
      `INSERT INTO bulk_entries (job_id, idx, phone, error_code, error_message, done_at, phone_hash)
       SELECT j.id, i, 'not-a-number', 'INVALID_REQUEST', 'not a number', now(), '' FROM unnest($1::uuid[]) AS j(id), generate_series(0, 2) AS i`,
      [ids],
    );
    await m.clock.advance(m.config.retention.bulkEntriesDays * DAY_MS + 60_000);
    const statements = jest.spyOn(m.get(BulkPrivacyRepository), 'deleteEntriesOfJobsCompletedBefore');
    const size = jest.replaceProperty(m.config.retention, 'batchSize', batchSize);
    try {
      expect(await m.get(RetentionService).runOnce(m.clock.date())).toMatchObject({ bulk_entries: 90 });
      const batches = await Promise.all(statements.mock.results.map((result) => result.value as Promise<{ entries: number }>));
      expect(batches.length).toBeGreaterThanOrEqual(90 / batchSize);
      for (const batch of batches) expect(batch.entries).toBeLessThanOrEqual(batchSize);
    } finally {
      statements.mockRestore();
      size.restore();
    }
    expect(await count(`bulk_entries WHERE job_id = ANY($1::uuid[])`, [ids])).toBe(0);
    expect(await count(`bulk_jobs WHERE id = ANY($1::uuid[]) AND entries_deleted_at IS NOT NULL`, [ids])).toBe(30);
  });

  it('entries written before their keyed hash was get it from the retention run, once, so that an erasure finds them by index', async () => {
    const account = await createAccount(m, { credits: 0 });
    const [job]: Array<{ id: string }> = await m.db.query(
      `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, csv_layout, source, chunks, completed_at)
       VALUES (gen_random_uuid(), $1, 'completed', 3, 3, 0, 0, 0, '[]', '{"answer":[],"answered_by":[]}', 'retention-test', 1, $2) RETURNING id`,
      [account.id, m.clock.date()],
    );
    const forms = ['+447400202101', '07400 202102', 'not-a-number'];
    await m.db.query(
      `INSERT INTO bulk_entries (job_id, idx, phone, error_code, error_message, done_at)
       SELECT $1, i - 1, ($2::text[])[i], 'INVALID_REQUEST', 'test', now() FROM generate_series(1, 3) AS i`,
      [job.id, forms],
    );
    const hashes = async () => (await m.db.query(`SELECT phone_hash FROM bulk_entries WHERE job_id = $1 ORDER BY idx`, [job.id])).map((row: { phone_hash: string | null }) => row.phone_hash);
    expect(await hashes()).toEqual([null, null, null]);
    expect((await m.get(RetentionService).runOnce(m.clock.date())).bulk_entries_hashed).toBe(3);
    expect(await hashes()).toEqual([storedFormHash(m.config.dataHashKey, forms[0]), storedFormHash(m.config.dataHashKey, forms[1]), '']);
    expect((await m.get(RetentionService).runOnce(m.clock.date())).bulk_entries_hashed).toBe(0);
  });
});
