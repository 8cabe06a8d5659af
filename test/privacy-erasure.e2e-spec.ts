import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { Client } from 'pg';
import request from 'supertest';
import { maskPhone } from '../src/common/phone';
import { waitForBulkJob } from './helpers/bulk';
import { testRedisUrl } from './helpers/redis';
import { freePort, ServiceProcess, startServiceProcess } from './helpers/service-process';
import { createAccount } from './factories/accounts';
import { expectError } from './helpers/expect-error';
import { startTestApp, TestApp } from './helpers/test-app';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { startTwilioSimulator, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { CHECKS_BOTH_UPSTREAMS_OFFER, twoUpstreamsEnv } from './provider-helpers';
import { waitForRound } from './helpers/watchlists';

const ADMIN_TOKEN = 'privacy-erasure-admin-token-0123456789';
/** A number no other suite uses: the scans below look for it in the whole database and the whole Redis. */
const NUMBER = '+447400654329';
const DIGITS = NUMBER.slice(1);
const OTHER = '+447400654118';

/**
 * The proof: the number goes through every store (calls with and without an Idempotency-Key on
 * two instances, a bulk job in three spellings, a watchlist round), then POST /admin/v1/erasures runs
 * on the other instance. Afterwards neither a pg_dump of the database's data, nor any Redis key or
 * value, nor either instance's whole log output holds the number's digits beyond its masked form; the
 * money still adds up and the Idempotency-Key cannot be charged again. The failover of one number
 * between two upstreams, also in the list, has its own proof below.
 */
describe('erasure of a number from every store, proven by scanning the database, Redis and the logs', () => {
  let a: ServiceProcess;
  let b: ServiceProcess;
  let db: Client;
  let redis: Redis;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    const tag = randomBytes(4).toString('hex');
    const env = {
      ADMIN_TOKEN,
      LOG_LEVEL: 'debug',
      PROVIDER: 'sandbox',
      REDIS_URL: testRedisUrl(),
      CACHE_KEY_PREFIX: `pf:privacy:${tag}:lookup:`,
      RATE_LIMIT_REDIS_PREFIX: `pf:privacy:${tag}:rl:`,
      BULK_QUEUE_NAME: `bulk-privacy-${tag}`,
      BULK_POLL_INTERVAL_SECONDS: '0.5',
      WATCHLIST_SCHEDULE_GROUP: `wl-privacy-${tag}`,
      WATCHLIST_POLL_INTERVAL_MS: '100',
    };
    a = await startServiceProcess(env, await freePort());
    await a.waitFor(/listening on/);
    b = await startServiceProcess(env, await freePort());
    await b.waitFor(/listening on/);
    db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
  }, 120_000);

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await db?.end();
    redis?.disconnect();
  });

  it('leaves no copy of the number anywhere, keeps the money exact and the Idempotency-Key charged once', async () => {
    const created = await request(a.baseUrl).post('/admin/v1/accounts').set(admin).send({ name: 'privacy', plan: 'enterprise', credits: 1000 }).expect(201);
    const auth = { Authorization: `Bearer ${created.body.api_key}` };
    const accountId = created.body.id as string;
    await request(a.baseUrl).patch('/api/v1/settings').set(auth).send({ checks: { network_status: true, line_type: true, portability: true } }).expect(200);

    // Calls: an idempotent one and its retry on the other instance, and plain ones on both (cached on both).
    const first = await request(a.baseUrl).post('/api/v1/filter').set(auth).set('Idempotency-Key', 'privacy-1').send({ phone: NUMBER }).expect(200);
    const retry = await request(b.baseUrl).post('/api/v1/filter').set(auth).set('Idempotency-Key', 'privacy-1').send({ phone: NUMBER }).expect(200);
    expect(retry.text).toBe(first.text);
    await request(b.baseUrl).post('/api/v1/filter').set(auth).send({ phone: '+44 7400 654329' }).expect(200);
    await request(a.baseUrl).post('/api/v1/filter').set(auth).send({ phone: OTHER }).expect(200);

    // A bulk job with the number in three spellings (one the E.164 rule refuses), and a watchlist round.
    const job = await request(a.baseUrl).post('/api/v1/filter/bulk').set(auth).send({ phones: [NUMBER, '+44 (7400) 654-329', '0044 7400 654329', OTHER] }).expect(202);
    await waitForBulkJob(a.baseUrl, auth, job.body.id);
    const watchlist = await request(b.baseUrl).post('/api/v1/watchlists').set(auth).send({ phones: [NUMBER, OTHER, '0044 7400 654329'], interval: 'daily' }).expect(201);
    await waitForRound(b.baseUrl, auth, watchlist.body.id, 1);
    expect(await dumpContains(DIGITS)).toBe(true); // the scan finds it before the erasure

    const erased = await request(b.baseUrl).post('/admin/v1/erasures').set(admin).send({ phone: '+44 (7400) 654-329' }).expect(200);
    expect(erased.body).toMatchObject({
      bulk_entries_masked: 3,
      watchlist_entries_deleted: 1,
      idempotency_keys_erased: 1,
      lookup_cache_entries_deleted: 3,
    });
    expect(erased.body.phone_hash).toMatch(/^[0-9a-f]{64}$/);

    // The database: every text and jsonb column of every table (and the queue's schema), as pg_dump writes them.
    expect(await dumpContains(DIGITS)).toBe(false);
    expect(await dumpContains(maskPhone(NUMBER))).toBe(true); // the ledger's masked form stays
    // Redis: every key and every value.
    for (const key of await allRedisKeys(redis)) {
      expect(key).not.toContain(DIGITS);
      expect(await redisValue(redis, key)).not.toContain(DIGITS);
    }

    // Money: balance = ledger sum, the number's charges still there (masked), and no second charge for the key.
    const money = async () => (await db.query(`SELECT (SELECT balance FROM accounts WHERE id = $1)::int AS balance, sum(amount)::int AS sum, count(*)::int AS rows FROM ledger_entries WHERE account_id = $1`, [accountId])).rows[0];
    const before = await money();
    expect(before.balance).toBe(before.sum);
    const again = await request(a.baseUrl).post('/api/v1/filter').set(auth).set('Idempotency-Key', 'privacy-1').send({ phone: NUMBER });
    expect(again.status).toBe(409);
    expect(await money()).toEqual(before);

    // The audit trail: who erased, the keyed hash, never the number.
    const audit = await request(a.baseUrl).get('/admin/v1/audit?limit=5').set(admin).expect(200);
    const entry = audit.body.entries.find((e: { action: string }) => e.action === 'phone.erase');
    expect(entry).toMatchObject({ actor: 'admin-api', target_type: 'phone', target_id: erased.body.phone_hash });
    expect(JSON.stringify(audit.body)).not.toContain(DIGITS);

    // Running it again finds nothing more.
    const twice = await request(a.baseUrl).post('/admin/v1/erasures').set(admin).send({ phone: NUMBER }).expect(200);
    expect(twice.body).toMatchObject({ ledger_entries_masked: 0, bulk_entries_masked: 0, watchlist_entries_deleted: 0, idempotency_keys_erased: 0, lookup_cache_entries_deleted: 0 });

    // The logs of both instances, over the whole run (LOG_LEVEL=debug): no full number in any spelling sent.
    for (const service of [a, b]) {
      const output = service.output();
      expect(output).toContain('/admin/v1/erasures'); // the scan reads the real log
      for (const phone of [NUMBER, OTHER]) {
        expect(output).not.toContain(phone.slice(1));
        expect(output).not.toContain(phone.slice(3));
      }
    }
  }, 120_000);

  it('refuses a number that is not E.164 after normalisation, in the contract shape', async () => {
    const res = await request(a.baseUrl).post('/admin/v1/erasures').set(admin).send({ phone: 'not a number' }).expect(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
  });
});

describe('erasure with the lookup cache unreachable', () => {
  it('fails loudly with 503 SERVICE_UNAVAILABLE (never a silent partial erasure), and can be run again', async () => {
    const t = await startTestApp({ PROVIDER: 'sandbox', REDIS_URL: 'redis://127.0.0.1:1', ADMIN_TOKEN });
    try {
      const res = await request(t.http).post('/admin/v1/erasures').set({ Authorization: `Bearer ${ADMIN_TOKEN}` }).send({ phone: '+447400209001' });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(res.body.error.message).toMatch(/erasure is not complete/);
      expect(res.body.error.message).not.toContain('127.0.0.1');
    } finally {
      await t.close();
    }
  });
});

describe('erasure and a watchlist created with an Idempotency-Key', () => {
  let t: TestApp;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
  beforeAll(async () => {
    t = await startTestApp({ PROVIDER: 'sandbox', ADMIN_TOKEN, WATCHLIST_SCHEDULE_GROUP: `wl-erase-key-${randomBytes(4).toString('hex')}` });
  });
  afterAll(async () => {
    await t?.close();
  });
  const create = (auth: Record<string, string>, key: string, phones: string[]) =>
    request(t.http).post('/api/v1/watchlists').set(auth).set('Idempotency-Key', key).send({ phones, interval: 'daily' });

  // A form of the number the creation rejects is listed in its answer (`rejected`), stored on the key and the watchlist.
  it('the stored answer listing the number goes with it: a retry is refused (409), never replayed with the number', async () => {
    const account = await createAccount(t, { credits: 100 });
    const created = await create(account.auth, 'wl-erased', ['+447400654502', 'call 447400654501']).expect(201);
    expect(JSON.stringify(created.body)).toContain('447400654501');
    await request(t.http).post('/admin/v1/erasures').set(admin).send({ phone: '+447400654501' }).expect(200);
    const [key] = await t.db.query(`SELECT response_body FROM idempotency_keys WHERE account_id = $1 AND key = 'wl-erased'`, [account.id]);
    expect(key.response_body ?? '').not.toContain('447400654501');
    const retry = await create(account.auth, 'wl-erased', ['+447400654502', 'call 447400654501']);
    expectError(retry, 409, 'IDEMPOTENCY_CONFLICT');
    expect(JSON.stringify(retry.body)).not.toContain('447400654501');
  });

  it('a creation whose answer was never stored on its key, erased, is answered 409 on retry (not a null body)', async () => {
    const account = await createAccount(t, { credits: 100 });
    const created = await create(account.auth, 'wl-lost', ['+447400654504', 'call 447400654503']).expect(201);
    expect(JSON.stringify(created.body)).toContain('447400654503');
    // The instance died after the creation committed, before the key stored its answer.
    await t.db.query(`UPDATE idempotency_keys SET status = 'in_progress', response_status = NULL, response_body = NULL WHERE account_id = $1 AND key = 'wl-lost'`, [account.id]);
    await request(t.http).post('/admin/v1/erasures').set(admin).send({ phone: '+447400654503' }).expect(200);
    expectError(await create(account.auth, 'wl-lost', ['+447400654504', 'call 447400654503']), 409, 'IDEMPOTENCY_CONFLICT');
    // Also once the attempt that held the key is long gone (a retry then takes the key over).
    await t.db.query(`UPDATE idempotency_keys SET claimed_at = now() - interval '1 hour' WHERE account_id = $1 AND key = 'wl-lost'`, [account.id]);
    expectError(await create(account.auth, 'wl-lost', ['+447400654504', 'call 447400654503']), 409, 'IDEMPOTENCY_CONFLICT');
    // The key is kept (never completed with an empty answer), and the watchlist is never created twice.
    expect(await t.db.query(`SELECT status, response_body FROM idempotency_keys WHERE account_id = $1 AND key = 'wl-lost'`, [account.id])).toEqual([
      { status: 'in_progress', response_body: null },
    ]);
    expectError(await create(account.auth, 'wl-lost', ['+447400654504', 'call 447400654503']), 409, 'IDEMPOTENCY_CONFLICT');
    expect(await t.db.query(`SELECT count(*)::int AS n FROM watchlists WHERE account_id = $1`, [account.id])).toEqual([{ n: 1 }]);
  });
});

/**
 * The issue's last case: a number answered by the backup upstream after the primary failed
 * (LOOKUP_PROVIDERS=primary,backup, each against its simulator), with an idempotent retry, then erased.
 * The failover path (its metrics, the breakers' state in /health/ready, its warnings in the log, the
 * cache written from the backup's answer) must keep no copy the erasure misses.
 */
describe('erasure of a number that was answered by the backup after the primary failed', () => {
  const FAILED_OVER = '+447400654337';
  const FAILED_OVER_DIGITS = FAILED_OVER.slice(1);
  let primary: UpstreamSimulator;
  let backup: TwilioSimulator;
  let service: ServiceProcess;
  let db: Client;
  let redis: Redis;
  let tag: string;
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  beforeAll(async () => {
    [primary, backup] = await Promise.all([startUpstreamSimulator(), startTwilioSimulator()]);
    tag = randomBytes(4).toString('hex');
    service = await startServiceProcess(
      {
        ...twoUpstreamsEnv(primary.url, backup.url, { PROVIDER_TIMEOUT_MS: '5000' }),
        ADMIN_TOKEN,
        LOG_LEVEL: 'debug',
        REDIS_URL: testRedisUrl(),
        CACHE_KEY_PREFIX: `pf:privacy-failover:${tag}:lookup:`,
        RATE_LIMIT_REDIS_PREFIX: `pf:privacy-failover:${tag}:rl:`,
        BULK_QUEUE_NAME: `bulk-privacy-failover-${tag}`,
        BULK_POLL_INTERVAL_SECONDS: '0.5',
        WATCHLIST_SCHEDULE_GROUP: `wl-privacy-failover-${tag}`,
      },
      await freePort(),
    );
    await service.waitFor(/listening on/);
    db = new Client({ connectionString: process.env.DATABASE_URL });
    await db.connect();
    redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
  }, 120_000);

  afterAll(async () => {
    await service?.stop();
    await Promise.all([primary?.close(), backup?.close()]);
    await db?.end();
    redis?.disconnect();
  });

  it('the failover leaves no copy: database, Redis, metrics, health and logs hold only the masked form', async () => {
    const created = await request(service.baseUrl).post('/admin/v1/accounts').set(admin).send({ name: 'privacy-failover', plan: 'enterprise', credits: 1000 }).expect(201);
    const auth = { Authorization: `Bearer ${created.body.api_key}` };
    const accountId = created.body.id as string;
    await request(service.baseUrl).patch('/api/v1/settings').set(auth).send(CHECKS_BOTH_UPSTREAMS_OFFER).expect(200);
    const failovers = async () => {
      const line = (await request(service.baseUrl).get('/metrics').expect(200)).text.split('\n').find((row) => row.startsWith('phone_filter_upstream_failovers_total{provider="primary"}'));
      return Number(line?.split(' ')[1] ?? 0);
    };

    // The primary is down: the call (with an Idempotency-Key) is answered by the backup, each check after the primary failed.
    primary.setOptions({ outage: true });
    primary.resetStats();
    backup.resetStats();
    const failoversBefore = await failovers();
    const first = await request(service.baseUrl).post('/api/v1/filter').set(auth).set('Idempotency-Key', 'privacy-failover-1').send({ phone: FAILED_OVER }).expect(200);
    expect(first.body).toMatchObject({ status: 'CONNECTED', line_type: 'MOBILE' });
    expect(primary.stats().requests).toBe(2); // network_status and line_type, both refused (503)
    expect(backup.stats().requests).toBe(2); // ... and both answered by the backup
    expect((await failovers()) - failoversBefore).toBe(2);

    // The primary is back: the retry replays the stored answer, and a call in another spelling is answered
    // from the cache the backup's answer filled; neither reaches an upstream.
    primary.setOptions({ outage: false });
    primary.resetStats();
    backup.resetStats();
    const retry = await request(service.baseUrl).post('/api/v1/filter').set(auth).set('Idempotency-Key', 'privacy-failover-1').send({ phone: FAILED_OVER }).expect(200);
    expect(retry.text).toBe(first.text);
    await request(service.baseUrl).post('/api/v1/filter').set(auth).send({ phone: '+44 7400 654337' }).expect(200);
    // A bulk job with it too (answered from the same cache): its entries hold the number and the backup's answer.
    const job = await request(service.baseUrl).post('/api/v1/filter/bulk').set(auth).send({ phones: [FAILED_OVER, '+44 (7400) 654-337'] }).expect(202);
    await waitForBulkJob(service.baseUrl, auth, job.body.id);
    expect(primary.stats().requests + backup.stats().requests).toBe(0);
    expect(await dumpContains(FAILED_OVER_DIGITS)).toBe(true); // the scan finds it before the erasure

    const erased = await request(service.baseUrl).post('/admin/v1/erasures').set(admin).send({ phone: '+44 (7400) 654-337' }).expect(200);
    expect(erased.body).toMatchObject({ bulk_entries_masked: 2, idempotency_keys_erased: 1 });
    expect(erased.body.lookup_cache_entries_deleted).toBeGreaterThan(0);

    // The database and Redis: no digits of the number beyond its masked form.
    expect(await dumpContains(FAILED_OVER_DIGITS)).toBe(false);
    expect(await dumpContains(maskPhone(FAILED_OVER))).toBe(true);
    for (const key of await allRedisKeys(redis)) {
      expect(key).not.toContain(FAILED_OVER_DIGITS);
      expect(await redisValue(redis, key)).not.toContain(FAILED_OVER_DIGITS);
    }
    // The failover's own state: metrics (per-provider counters, breaker gauges) and the breakers in /health/ready.
    expect((await request(service.baseUrl).get('/metrics').expect(200)).text).not.toContain(FAILED_OVER.slice(3));
    expect(JSON.stringify((await request(service.baseUrl).get('/health/ready')).body)).not.toContain(FAILED_OVER.slice(3));
    // The money: balance = ledger sum.
    const [money] = (await db.query(`SELECT (SELECT balance FROM accounts WHERE id = $1)::int AS balance, sum(amount)::int AS sum FROM ledger_entries WHERE account_id = $1`, [accountId])).rows;
    expect(money.balance).toBe(money.sum);
    // The log of the whole run (LOG_LEVEL=debug), the primary's failures included.
    const output = service.output();
    expect(output).toContain('/admin/v1/erasures');
    expect(output).not.toContain(FAILED_OVER.slice(1));
    expect(output).not.toContain(FAILED_OVER.slice(3));

    // The instance's in-memory cache forgot the backup's answer too: the next call asks an upstream again.
    primary.resetStats();
    backup.resetStats();
    await request(service.baseUrl).post('/api/v1/filter').set(auth).send({ phone: FAILED_OVER }).expect(200);
    expect(primary.stats().requests + backup.stats().requests).toBe(2);
  }, 120_000);
});

/**
 * Whether the database's data contains `text`: every row of every table of every schema (pgboss's queue
 * included), read as its text form, which is what `pg_dump --data-only` writes. Done in SQL rather than
 * with the pg_dump binary, whose version must match the server's (the embedded PostgreSQL is newer than
 * a machine's pg_dump).
 */
async function dumpContains(text: string): Promise<boolean> {
  const client = new Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    const { rows: tables } = await client.query<{ name: string }>(
      `SELECT format('%I.%I', table_schema, table_name) AS name FROM information_schema.tables
        WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`,
    );
    expect(tables.length).toBeGreaterThan(10);
    for (const { name } of tables) {
      const { rows } = await client.query(`SELECT 1 FROM ${name} t WHERE strpos(t::text, $1) > 0 LIMIT 1`, [text]);
      if (rows.length > 0) return true;
    }
    return false;
  } finally {
    await client.end();
  }
}

/** Every key of the test Redis. */
async function allRedisKeys(redis: Redis): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

/** A Redis value of any type, as text. */
async function redisValue(redis: Redis, key: string): Promise<string> {
  const type = await redis.type(key);
  if (type === 'string') return (await redis.get(key)) ?? '';
  if (type === 'hash') return JSON.stringify(await redis.hgetall(key));
  if (type === 'zset') return JSON.stringify(await redis.zrange(key, 0, -1, 'WITHSCORES'));
  if (type === 'list') return JSON.stringify(await redis.lrange(key, 0, -1));
  if (type === 'set') return JSON.stringify(await redis.smembers(key));
  return '';
}
