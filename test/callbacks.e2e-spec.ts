import { randomBytes, randomUUID } from 'node:crypto';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../src/database/data-source-options';
import { createAccount } from './factories/accounts';
import { CallbackReceiver, startReceiver } from './helpers/callback-receiver';
import { eventually } from './helpers/eventually';
import { withClient } from './global-setup';
import { startTestApp, TestApp } from './helpers/test-app';
import { waitForRound } from './helpers/watchlists';

/**
 * Every outbound callback goes through the one outbox and dispatcher of webhooks/: a bulk job's and a
 * watchlist's land there with their callback_url and are delivered by its rounds. The retry schedule
 * they share (backoff, CALLBACK_RETRIES, give-up) is proven on the clock in
 * test/medium/webhooks/outbox-delivery.medium-spec.ts.
 */
describe('callbacks: one outbox, one dispatcher', () => {
  let t: TestApp;
  let receiver: CallbackReceiver;
  beforeAll(async () => {
    receiver = await startReceiver(Array.from({ length: 50 }, () => 500), '/hooks/refusing');
    t = await startTestApp({
      PROVIDER: 'sandbox',
      PROVIDER_TIMEOUT_MS: '300',
      WATCHLIST_SCHEDULE_GROUP: `callbacks-${randomBytes(4).toString('hex')}`,
      WATCHLIST_POLL_INTERVAL_MS: '100',
      EVENTS_POLL_INTERVAL_MS: '100',
      CALLBACK_RETRIES: '0',
      CALLBACK_TIMEOUT_MS: '2000',
      CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true',
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
  });

  it("sends a bulk job's and a watchlist's callbacks from the same outbox, and gives them up by the same rule", async () => {
    const account = await createAccount(t, { credits: 12 });
    const job = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: ['+447400123456'], callback_url: receiver.url }).expect(202);
    const id = (
      await request(t.http)
        .post('/api/v1/watchlists')
        .set(account.auth)
        .send({ phones: ['+447400150005', '+447400151234'], interval: 'daily', callback_url: receiver.url })
        .expect(201)
    ).body.id;
    await waitForRound(t.http, account.auth, id, 1); // the balance is now 0: the next round pauses, with a callback
    await t.db.query(`UPDATE watchlists SET next_check_at = now() WHERE id = $1`, [id]);

    const rows = await eventually(
      (): Promise<Array<{ type: string; state: string; attempts: number }>> => t.db.query(`SELECT type, state, attempts, payload FROM account_events WHERE account_id = $1 AND callback_url = $2 ORDER BY type`, [account.id, receiver.url]),
      (found: Array<{ type: string; state: string; attempts: number }>) => found.length === 2 && found.every((row) => row.state === 'failed'),
      20_000,
    );
    // One attempt each and CALLBACK_RETRIES (0) retries, then given up.
    expect(rows.map((row) => [row.type, row.state, row.attempts])).toEqual([
      ['bulk.completed', 'failed', 1],
      ['watchlist.paused', 'failed', 1],
    ]);
    const bodies = receiver.calls.map((call) => JSON.parse(call.body) as { id: string; watchlist_id?: string });
    expect(bodies.filter((body) => body.id === job.body.id)).toEqual([{ id: job.body.id, status: 'completed', total: 1 }]);
    expect(bodies.filter((body) => body.watchlist_id === id)).toHaveLength(1);
    // Callbacks to a callback_url are not the account's events.
    expect((await request(t.http).get('/api/v1/events').set(account.auth).expect(200)).body.events).toEqual([]);
  }, 60_000);
});

/**
 * The upgrade: callbacks pending in pg-boss's webhook queue and in watchlist_events become outbox rows
 * with the body they would have had. Run on a database of its own (the migrations up to the previous
 * one, the old rows, then this migration).
 */
describe('migration OneCallbackOutbox', () => {
  const serverUrl = process.env.DATABASE_URL!;
  const name = `pf_outbox_${randomBytes(4).toString('hex')}`;
  let db: DataSource;
  beforeAll(async () => {
    await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    db = new DataSource({ ...dataSourceOptions(url.toString(), 2), logging: ['error'] });
    await db.initialize();
    await db.runMigrations({ transaction: 'each' });
    // Back to the schema just before OneCallbackOutbox (undoing it and whatever came after it).
    const applied = async () => (await db.query(`SELECT 1 FROM typeorm_migrations WHERE name = 'OneCallbackOutbox1764600000300'`)).length > 0;
    while (await applied()) await db.undoLastMigration({ transaction: 'each' });
  });
  afterAll(async () => {
    await db?.destroy();
    await withClient(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name}`));
  });

  it('carries over the deliveries pending at upgrade time', async () => {
    const accountId = randomUUID();
    const jobId = randomUUID();
    const watchlistId = randomUUID();
    const eventId = randomUUID();
    await db.query(`INSERT INTO accounts (id, name, plan, balance) VALUES ($1, 'upgrade', 'free', 0)`, [accountId]);
    await db.query(
      `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, source, callback_url, chunks, completed_at)
       VALUES ($1, $2, 'completed', 3, 3, 0, 4, 0, '{}', 'internal', 'https://hooks.example.com/bulk', 1, now())`,
      [jobId, accountId],
    );
    // pg-boss's job table as far as the migration reads it.
    await db.query(`CREATE SCHEMA pgboss`);
    await db.query(`CREATE TABLE pgboss.job (name text, data jsonb, state text, completed_on timestamptz)`);
    await db.query(`INSERT INTO pgboss.job (name, data, state) VALUES ('bulk-lookups-webhooks', $1, 'retry')`, [JSON.stringify({ jobId })]);
    // A webhook-queue job the migration does not carry over (its bulk job is not completed): left to its queue, not cancelled.
    const running = randomUUID();
    await db.query(
      `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, source, callback_url, chunks)
       VALUES ($1, $2, 'processing', 3, 1, 0, 4, 0, '{}', 'internal', 'https://hooks.example.com/other', 1)`,
      [running, accountId],
    );
    await db.query(`INSERT INTO pgboss.job (name, data, state) VALUES ('bulk-lookups-webhooks', $1, 'created')`, [JSON.stringify({ jobId: running })]);
    await db.query(
      `INSERT INTO watchlists (id, account_id, name, interval, callback_url, next_check_at, schedule_group)
       VALUES ($1, $2, 'w', 'daily', 'https://hooks.example.com/watch', now(), 'default')`,
      [watchlistId, accountId],
    );
    const [entry] = await db.query(`INSERT INTO watchlist_entries (watchlist_id, phone, reference) VALUES ($1, '+447400150005', 'r1') RETURNING id`, [watchlistId]);
    await db.query(
      `INSERT INTO watchlist_changes (watchlist_id, entry_id, round, phone, field, before, after, detected_at)
       VALUES ($1, $2, 2, '+447400150005', 'is_ported', 'false', 'true', '2026-11-20T10:00:00.123Z')`,
      [watchlistId, entry.id],
    );
    await db.query(`INSERT INTO watchlist_events (id, watchlist_id, type, round, schedule_group) VALUES ($1, $2, 'watchlist.changes', 2, 'default')`, [eventId, watchlistId]);

    await db.runMigrations({ transaction: 'each' });

    const rows: Array<{ type: string; callback_url: string; payload: unknown; state: string }> = await db.query(
      `SELECT type, callback_url, payload, state FROM account_events WHERE account_id = $1 ORDER BY type`,
      [accountId],
    );
    expect(rows).toEqual([
      { type: 'bulk.completed', callback_url: 'https://hooks.example.com/bulk', state: 'pending', payload: { id: jobId, status: 'completed', total: 3 } },
      {
        type: 'watchlist.changes',
        callback_url: 'https://hooks.example.com/watch',
        state: 'pending',
        payload: {
          id: eventId,
          event: 'watchlist.changes',
          watchlist_id: watchlistId,
          round: 2,
          changes: [{ phone: '+447400150005', reference: 'r1', field: 'is_ported', before: false, after: true, detected_at: '2026-11-20T10:00:00.123Z' }],
        },
      },
    ]);
    const jobs: Array<{ job: string; state: string }> = await db.query(`SELECT data->>'jobId' AS job, state FROM pgboss.job`);
    expect(Object.fromEntries(jobs.map((row) => [row.job, row.state]))).toEqual({ [jobId]: 'cancelled', [running]: 'created' });
    expect((await db.query(`SELECT to_regclass('watchlist_events') AS t`))[0].t).toBeNull();
  });
});
