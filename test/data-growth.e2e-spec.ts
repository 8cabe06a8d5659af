import request from 'supertest';
import type { QueryRunner } from 'typeorm';
import { createAccount } from './factories/accounts';
import { distinctNumbers, waitForBulkJob } from './helpers/bulk';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * Costs that stay flat as the data grows (issue 26, docs/benchmark.md "Data growth"): counts the
 * routes show are kept beside the rows rather than recounted per call. Each proof takes the counted
 * table's strongest lock in a transaction of its own (no other writer or reader gets in) and calls the
 * route meanwhile: a route that still counts the rows waits for the lock and never answers in time.
 */
describe('counts kept as the data grows', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ PROVIDER: 'sandbox', WATCHLIST_POLL_INTERVAL_MS: '100', BULK_POLL_INTERVAL_SECONDS: '0.5' });
  });
  afterAll(async () => t?.close());

  /** Runs `work` while `table` is locked against everyone else; rolls back after. */
  async function whileLocked<T>(table: string, work: (locked: QueryRunner) => Promise<T>): Promise<T> {
    const locked = t.db.createQueryRunner();
    await locked.connect();
    await locked.startTransaction();
    try {
      await locked.query(`LOCK TABLE ${table} IN ACCESS EXCLUSIVE MODE`);
      return await work(locked);
    } finally {
      await locked.rollbackTransaction();
      await locked.release();
    }
  }

  /** The answer, or a failure saying the route waited for a table it should not read. */
  function answeredWithin<T>(what: string, pending: PromiseLike<T>, ms = 3000): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} waited for the locked table`)), ms)));
    return Promise.race([Promise.resolve(pending), waited]).finally(() => clearTimeout(timer));
  }

  it("lists watchlists with their totals, kept through adds, removals and re-adds, without reading the entries", async () => {
    const account = await createAccount(t, { credits: 10_000 });
    const [a, b, c, d] = distinctNumbers(4, 81);
    const first = await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones: [a, b, c], interval: 'monthly' }).expect(201);
    const second = await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones: [a], interval: 'monthly' }).expect(201);
    await request(t.http).patch(`/api/v1/watchlists/${first.body.id}`).set(account.auth).send({ remove: [b, c] }).expect(200);
    await request(t.http).patch(`/api/v1/watchlists/${first.body.id}`).set(account.auth).send({ add: [b, d, a] }).expect(200);

    const listed = await whileLocked('watchlist_entries', async (locked) => {
      const counted: Array<{ watchlist_id: string; total: string }> = await locked.query(
        `SELECT watchlist_id, count(*) AS total FROM watchlist_entries WHERE watchlist_id = ANY($1::uuid[]) AND removed_at IS NULL GROUP BY watchlist_id`,
        [[first.body.id, second.body.id]],
      );
      expect(new Map(counted.map((row) => [row.watchlist_id, Number(row.total)]))).toEqual(new Map([[first.body.id, 3], [second.body.id, 1]]));
      return answeredWithin('GET /api/v1/watchlists', request(t.http).get('/api/v1/watchlists').set(account.auth));
    });
    expect(listed.status).toBe(200);
    expect(listed.body.watchlists.map((w: { id: string; total: number }) => [w.id, w.total])).toEqual([
      [second.body.id, 1],
      [first.body.id, 3],
    ]);
  });

  it('the plan limit of watched numbers counts every watchlist of the account, not the removed numbers nor deleted watchlists', async () => {
    const plan = `growth-${Date.now()}`;
    await t.db.query(`INSERT INTO plans (name, "limit", window_seconds, max_watched_numbers) VALUES ($1, 100, 1, 3)`, [plan]);
    const account = await createAccount(t, { credits: 10_000, plan });
    const [a, b, c, d] = distinctNumbers(4, 82);
    const first = await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones: [a, b], interval: 'monthly' }).expect(201);
    await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones: [c, d], interval: 'monthly' }).expect(400);
    await request(t.http).patch(`/api/v1/watchlists/${first.body.id}`).set(account.auth).send({ remove: [b] }).expect(200);
    const other = await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones: [c, d], interval: 'monthly' }).expect(201);
    await request(t.http).patch(`/api/v1/watchlists/${first.body.id}`).set(account.auth).send({ add: [b] }).expect(400);
    await request(t.http).delete(`/api/v1/watchlists/${other.body.id}`).set(account.auth).expect(200);
    await request(t.http).patch(`/api/v1/watchlists/${first.body.id}`).set(account.auth).send({ add: [b, c] }).expect(200);
  });

  it('GET /metrics reports bulk jobs by status without reading bulk_jobs', async () => {
    const account = await createAccount(t, { credits: 10_000 });
    const submitted = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: distinctNumbers(3, 83) }).expect(202);
    await waitForBulkJob(t.http, account.auth, submitted.body.id);

    const { counted, scraped } = await whileLocked('bulk_jobs', async (locked) => {
      const rows: Array<{ status: string; jobs: string }> = await locked.query(`SELECT status, count(*) AS jobs FROM bulk_jobs GROUP BY status`);
      const metrics = await answeredWithin('GET /metrics', request(t.http).get('/metrics'));
      return { counted: rows, scraped: metrics.text };
    });
    const reported = new Map([...scraped.matchAll(/^phone_filter_bulk_jobs\{status="(\w+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
    expect(reported.get('completed')).toBeGreaterThanOrEqual(1);
    for (const status of ['queued', 'processing', 'completed']) {
      expect([status, reported.get(status)]).toEqual([status, Number(counted.find((row) => row.status === status)?.jobs ?? 0)]);
    }
  });

  it('indexes only the refunds for "a charge is refunded at most once", and still refuses a second refund of a charge', async () => {
    const [index]: Array<{ indexdef: string }> = await t.db.query(`SELECT indexdef FROM pg_indexes WHERE indexname = 'ledger_entries_refund_of_unique'`);
    expect(index.indexdef).toMatch(/UNIQUE INDEX .* \(refund_of\) WHERE \(refund_of IS NOT NULL\)$/);

    const account = await createAccount(t, { credits: 100 });
    const [charge]: Array<{ id: string }> = await t.db.query(
      `INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, settled_at) VALUES ($1, 'CHARGE', 0, 100, $2, now()) RETURNING id`,
      [account.id, `growth-charge-${account.id}`],
    );
    const refund = (reference: string) =>
      t.db.query(`INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, refund_of) VALUES ($1, 'REFUND', 0, 100, $2, $3)`, [
        account.id,
        reference,
        charge.id,
      ]);
    await refund(`growth-refund-1-${account.id}`);
    await expect(refund(`growth-refund-2-${account.id}`)).rejects.toMatchObject({ driverError: { code: '23505', constraint: 'ledger_entries_refund_of_unique' } });
  });

  it('the hourly retention delete of account events finds the expired events by index', async () => {
    const plan = await whileLocked('account_events', async (locked) => {
      await locked.query(`SET LOCAL enable_seqscan = off`);
      const rows: Array<{ 'QUERY PLAN': string }> = await locked.query(`EXPLAIN DELETE FROM account_events WHERE created_at < now() - make_interval(days => 30)`);
      return rows.map((row) => row['QUERY PLAN']).join('\n');
    });
    expect(plan).toContain('account_events_created_at_idx');
  });
});
