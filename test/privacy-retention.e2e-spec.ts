import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
import { IdempotencyRepository } from '../src/idempotency/idempotency.repository';
import { maskPhone } from '../src/common/phone';
import { BulkPrivacyRepository } from '../src/bulk/bulk-privacy.repository';
import { RetentionCounts, RetentionService } from '../src/privacy/retention.service';
import { createAccount, TestAccount } from './factories/accounts';
import { waitForBulkJob } from './helpers/bulk';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { eventually } from './helpers/eventually';
import { startTestApp, TestApp } from './helpers/test-app';
import { waitForRound } from './helpers/watchlists';

/**
 * The retention periods of docs/privacy.md. Rows are aged by moving their timestamps back (the only raw
 * writes here); the jobs then run on two instances at once, in batches of 2 rows, as the scheduler runs them.
 */
describe('retention: each store lets go of numbers after its period, in bounded batches, safely on two instances', () => {
  let t: TestApp;
  let other: TestApp;
  const env = () => ({
    PROVIDER: 'sandbox',
    RETENTION_BATCH_SIZE: '2',
    BULK_QUEUE_NAME: `bulk-retention-${randomBytes(4).toString('hex')}`,
    BULK_POLL_INTERVAL_SECONDS: '0.5',
    WATCHLIST_SCHEDULE_GROUP: `wl-retention-${randomBytes(4).toString('hex')}`,
    WATCHLIST_POLL_INTERVAL_MS: '100',
  });
  beforeAll(async () => {
    const shared = env();
    t = await startTestApp(shared);
    other = await startTestApp(shared);
  });
  afterAll(async () => {
    await other?.close();
    await t?.close();
  });

  const age = (sql: string, params: unknown[]) => t.db.query(sql, params);
  const runOnBoth = async (): Promise<RetentionCounts> => {
    const runs = await Promise.all([t.app.get(RetentionService).runOnce(), other.app.get(RetentionService).runOnce()]);
    return Object.fromEntries(Object.keys(runs[0]).map((name) => [name, runs[0][name] + runs[1][name]]));
  };
  const money = (account: TestAccount) =>
    t.db.query(`SELECT id, type, amount, balance_after, reference, refund_of, settled_at FROM ledger_entries WHERE account_id = $1 ORDER BY id`, [account.id]);

  it('deletes old bulk entries, masks old ledger phones, drops expired keys, gone watchlist entries and old audit rows; money untouched', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const filter = (key: string, phone: string) => request(t.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', key).send({ phone });

    // Calls with keys: one whose life ended 25 h ago (past the 24 h grace), one that ended 6 h ago.
    await filter('retention-old', '+447400201001').expect(200);
    await filter('retention-recent', '+447400201002').expect(200);
    await age(`UPDATE idempotency_keys SET created_at = now() - interval '49 hours' WHERE account_id = $1 AND key = 'retention-old'`, [account.id]);
    await age(`UPDATE idempotency_keys SET created_at = now() - interval '30 hours' WHERE account_id = $1 AND key = 'retention-recent'`, [account.id]);

    // Ledger rows holding a whole number (as rows written before charges were masked): 91 and 10 days old.
    const charges: Array<{ id: string }> = await t.db.query(`SELECT id FROM ledger_entries WHERE account_id = $1 AND type = 'CHARGE' ORDER BY id`, [account.id]);
    await age(`UPDATE ledger_entries SET phone = '+447400201001', created_at = now() - interval '91 days' WHERE id = $1`, [charges[0].id]);
    await age(`UPDATE ledger_entries SET phone = '+447400201002', created_at = now() - interval '10 days' WHERE id = $1`, [charges[1].id]);

    // Two bulk jobs: one completed 31 days ago, one just now.
    const jobs: string[] = [];
    const costs: number[] = [];
    for (const phones of [['+447400202001', '+447400202002', '+447400202003', 'bad'], ['+447400202004']]) {
      const job = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones }).expect(202);
      await waitForBulkJob(t.http, account.auth, job.body.id);
      jobs.push(job.body.id);
      costs.push(job.body.cost);
    }
    await age(`UPDATE bulk_jobs SET completed_at = now() - interval '31 days' WHERE id = $1`, [jobs[0]]);

    // Watchlists: an entry removed 31 days ago (with a change), a live entry with a change 366 days old, one deleted 31 days ago.
    const kept = await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones: ['+447400203001', '+447400203002'], interval: 'daily' }).expect(201);
    await waitForRound(t.http, account.auth, kept.body.id, 1);
    await request(t.http).patch(`/api/v1/watchlists/${kept.body.id}`).set(account.auth).send({ remove: ['+447400203001'] }).expect(200);
    await age(`UPDATE watchlist_entries SET removed_at = now() - interval '31 days' WHERE phone = '+447400203001'`, []);
    await age(
      `INSERT INTO watchlist_changes (watchlist_id, entry_id, round, phone, field, before, after, detected_at)
       SELECT watchlist_id, id, 1, phone, 'status', '"CONNECTED"', '"ABSENT"', now() - CASE WHEN removed_at IS NULL THEN interval '366 days' ELSE interval '1 day' END
         FROM watchlist_entries WHERE watchlist_id = $1`,
      [kept.body.id],
    );
    const gone = await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones: ['+447400204001'], interval: 'daily' }).expect(201);
    await waitForRound(t.http, account.auth, gone.body.id, 1);
    await request(t.http).delete(`/api/v1/watchlists/${gone.body.id}`).set(account.auth).expect(200);
    await age(`UPDATE watchlists SET deleted_at = now() - interval '31 days' WHERE id = $1`, [gone.body.id]);

    // An admin audit row 401 days old.
    await t.admin.changeCredits(account.id, 1, 'retention test', 'test');
    await age(`UPDATE admin_audit SET created_at = now() - interval '401 days' WHERE target_id = $1 AND action LIKE '%credit%'`, [account.id]);
    const oldAudit = Number((await t.db.query(`SELECT count(*) AS n FROM admin_audit WHERE created_at < now() - interval '400 days'`))[0].n);
    expect(oldAudit).toBeGreaterThan(0);

    const moneyBefore = await money(account);
    const counts = await runOnBoth();

    // Bulk: the old job's 4 entries went, the job (counts, cost) and its charges stay.
    expect(counts.bulk_entries).toBe(4);
    expect(Number((await t.db.query(`SELECT count(*) AS n FROM bulk_entries WHERE job_id = $1`, [jobs[0]]))[0].n)).toBe(0);
    expect(Number((await t.db.query(`SELECT count(*) AS n FROM bulk_entries WHERE job_id = $1`, [jobs[1]]))[0].n)).toBe(1);
    const old = await request(t.http).get(`/api/v1/filter/bulk/${jobs[0]}`).set(account.auth).expect(200);
    expect(old.body).toMatchObject({ status: 'completed', total: 4, processed: 4, cost: costs[0], results: [] });

    // Ledger: only the 91-day-old row is masked; amounts, references, balances exactly as before.
    expect(counts.ledger_phones_masked).toBe(1);
    const phones = await t.db.query(`SELECT id, phone FROM ledger_entries WHERE id = ANY($1::bigint[]) ORDER BY id`, [[charges[0].id, charges[1].id]]);
    expect(phones.map((row: { phone: string }) => row.phone)).toEqual([maskPhone('+447400201001'), '+447400201002']);
    expect(await money(account)).toEqual(moneyBefore);
    const state = await ledgerState(t.db, account.id);
    expect(state.balance).toBe(state.ledgerSum);

    // Idempotency-Keys: the one past its life and grace is gone (its charge stays, naming no key), the other is kept.
    const keys = await t.db.query(`SELECT key FROM idempotency_keys WHERE account_id = $1 ORDER BY key`, [account.id]);
    expect(keys).toEqual([{ key: 'retention-recent' }]);
    expect(counts.idempotency_keys).toBeGreaterThanOrEqual(1);
    const [orphan] = await t.db.query(`SELECT idempotency_key_id FROM ledger_entries WHERE id = $1`, [charges[0].id]);
    expect(orphan.idempotency_key_id).toBeNull();

    // Watchlists: the removed entry and its change, the deleted watchlist's entry, the year-old change of the live entry.
    const entries = await t.db.query(`SELECT phone FROM watchlist_entries WHERE watchlist_id = ANY($1::uuid[]) ORDER BY phone`, [[kept.body.id, gone.body.id]]);
    expect(entries).toEqual([{ phone: '+447400203002' }]);
    expect(Number((await t.db.query(`SELECT count(*) AS n FROM watchlist_changes WHERE watchlist_id = $1`, [kept.body.id]))[0].n)).toBe(0);
    expect(counts.watchlist_gone_entries).toBe(2);
    expect(counts.watchlist_changes_of_gone_entries + counts.watchlist_changes).toBe(2);

    // The audit trail: rows older than 400 days went.
    expect(Number((await t.db.query(`SELECT count(*) AS n FROM admin_audit WHERE created_at < now() - interval '400 days'`))[0].n)).toBe(0);
    expect(counts.admin_audit).toBe(oldAudit);

    // Run again on both: nothing left to do.
    const again = await runOnBoth();
    expect(Object.entries(again).filter(([, n]) => n > 0)).toEqual([]);
  }, 90_000);

  it('a key deleted past its life is a new key: used again it is charged once, like any key after its 24 h', async () => {
    const account = await createAccount(t, { credits: 100 });
    await request(t.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', 'reused').send({ phone: '+447400205001' }).expect(200);
    await age(`UPDATE idempotency_keys SET created_at = now() - interval '49 hours' WHERE account_id = $1`, [account.id]);
    await runOnBoth();
    // Retention deleted the row (claim() would re-take a row past 24 h anyway, so the charges below prove nothing alone).
    expect(await t.db.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE account_id = $1`, [account.id])).toEqual([{ n: 0 }]);
    await request(t.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', 'reused').send({ phone: '+447400205001' }).expect(200);
    const retry = await request(other.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', 'reused').send({ phone: '+447400205001' }).expect(200);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 92, ledgerSum: 92, byType: { TOPUP: 1, CHARGE: 2 } });
  });

  it('a failed call frees its key only if no charge names it, even one committed while it frees it (the FK no longer refuses)', async () => {
    const account = await createAccount(t, { credits: 100 });
    const keys = t.app.get(IdempotencyRepository);
    const key = (await keys.claim(account.id, 'racing-release', 'f'.repeat(64), null))!;
    // A charge naming the key, in a transaction still open: it holds a share lock on the key's row.
    const charging = new Client({ connectionString: process.env.DATABASE_URL });
    await charging.connect();
    try {
      await charging.query('BEGIN');
      await charging.query(
        `INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, idempotency_key_id) VALUES ($1, 'CHARGE', 0, 100, $2, $3)`,
        [account.id, `race:${key.id}`, key.id],
      );
      const releasing = keys.release(key);
      await new Promise((resolve) => setTimeout(resolve, 300)); // release is now waiting for the row
      await charging.query('COMMIT');
      await releasing;
    } finally {
      await charging.end();
    }
    expect(await t.db.query(`SELECT count(*)::int AS n FROM idempotency_keys WHERE id = $1`, [key.id])).toEqual([{ n: 1 }]);
    expect(await t.db.query(`SELECT idempotency_key_id FROM ledger_entries WHERE reference = $1`, [`race:${key.id}`])).toEqual([{ idempotency_key_id: key.id }]);
  });

  it('DELETE /api/v1/filter/bulk/{id}: a completed job loses its entries now, keeps its counts; 404 for another account', async () => {
    const account = await createAccount(t, { credits: 100 });
    const stranger = await createAccount(t, { credits: 0 });
    const job = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: ['+447400206001', '+447400206002'] }).expect(202);
    await waitForBulkJob(t.http, account.auth, job.body.id);
    expectError(await request(t.http).delete(`/api/v1/filter/bulk/${job.body.id}`).set(stranger.auth), 404, 'NOT_FOUND');
    const deleted = await request(t.http).delete(`/api/v1/filter/bulk/${job.body.id}`).set(account.auth).expect(200);
    expect(deleted.body).toEqual({ id: job.body.id, deleted_entries: 2 });
    const balance = 100 - job.body.cost;
    const after = await request(t.http).get(`/api/v1/filter/bulk/${job.body.id}`).set(account.auth).expect(200);
    expect(after.body).toMatchObject({ status: 'completed', total: 2, processed: 2, results: [] });
    expect((await request(t.http).delete(`/api/v1/filter/bulk/${job.body.id}`).set(account.auth).expect(200)).body.deleted_entries).toBe(0);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance, ledgerSum: balance });
  });

  it('DELETE /api/v1/filter/bulk/{id} refuses a job still running (400), and deletes nothing', async () => {
    const account = await createAccount(t, { credits: 100 });
    // ...0003 fails at the upstream every time: its chunk is retried, so the job stays unfinished.
    const job = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: ['+447400120003'] }).expect(202);
    expectError(await request(t.http).delete(`/api/v1/filter/bulk/${job.body.id}`).set(account.auth), 400, 'INVALID_REQUEST');
    expect(Number((await t.db.query(`SELECT count(*) AS n FROM bulk_entries WHERE job_id = $1`, [job.body.id]))[0].n)).toBe(1);
  });
});

describe('retention of bulk entries: batches bounded by entries, not by jobs', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      PROVIDER: 'sandbox',
      RETENTION_BATCH_SIZE: '10',
      BULK_QUEUE_NAME: `bulk-retention-small-${randomBytes(4).toString('hex')}`,
      WATCHLIST_SCHEDULE_GROUP: `wl-retention-small-${randomBytes(4).toString('hex')}`,
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('30 expired jobs of 3 entries all go in one run, no statement deleting more than the batch size (10)', async () => {
    const account = await createAccount(t, { credits: 0 });
    // 30 finished jobs of 3 entries, completed 31 days ago (written directly: 30 real jobs would only be slower).
    const jobs: Array<{ id: string }> = await t.db.query(
      `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, csv_layout, source, chunks, completed_at)
       SELECT gen_random_uuid(), $1, 'completed', 3, 3, 0, 0, 0, '[]', '{"answer":[],"answered_by":[]}', 'retention-test', 1, now() - interval '31 days'
         FROM generate_series(1, 30) RETURNING id`,
      [account.id],
    );
    const ids = jobs.map((job) => job.id);
    await t.db.query(
      `INSERT INTO bulk_entries (job_id, idx, phone, error_code, error_message, done_at)
       SELECT j.id, i, 'not-a-number', 'INVALID_REQUEST', 'not a number', now() FROM unnest($1::uuid[]) AS j(id), generate_series(0, 2) AS i`,
      [ids],
    );
    const statements = jest.spyOn(t.app.get(BulkPrivacyRepository), 'deleteEntriesOfJobsCompletedBefore');
    try {
      // Other apps on this database run their retention schedulers too and may take some of the batches:
      // what one run must achieve is that none is left, each statement within the bound.
      await t.app.get(RetentionService).runOnce();
      const batches = await Promise.all(statements.mock.results.map((result) => result.value as Promise<{ entries: number }>));
      expect(batches.length).toBeGreaterThanOrEqual(1);
      for (const batch of batches) expect(batch.entries).toBeLessThanOrEqual(10);
    } finally {
      statements.mockRestore();
    }
    // What another instance's run held when this one passed it, that run deletes as it commits (moments).
    const left = () => t.db.query(`SELECT count(*)::int AS n FROM bulk_entries WHERE job_id = ANY($1::uuid[])`, [ids]);
    expect(await eventually(left, ([{ n }]) => n === 0, 5000, 100)).toEqual([{ n: 0 }]);
    expect(await t.db.query(`SELECT count(*)::int AS n FROM bulk_jobs WHERE id = ANY($1::uuid[]) AND entries_deleted_at IS NOT NULL`, [ids])).toEqual([{ n: 30 }]);
  });
});
