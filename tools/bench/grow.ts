/**
 * `npm run bench:grow`: do the routes cost the same on a grown database as on an empty one?
 * (issue 26, docs/benchmark.md "Data growth"). On a PostgreSQL of its own (embedded, in a temporary
 * folder; or a fresh database on GROW_DATABASE_URL's server), the service in this process (sandbox
 * provider, in-memory cache) answers each route 200 times in a row on the empty database (one account
 * with a small watchlist, a bulk job, a few charges), then the database is grown with generate_series
 * INSERTs (minutes, not hours), vacuumed and analysed, and the same calls are made again. Prints, per
 * route, the median wall time and the PostgreSQL server's CPU per call (from /proc, the embedded
 * server only: the figure a busy machine does not blur), empty and grown, and their ratios.
 *
 * Sizes scale with GROW_SCALE (1 = the outside run of issue 26: 10 M ledger rows on the measured
 * account, 2,000 accounts × 2,000 rows, 2 M bulk entries, 1 M idempotency keys, 50,000 audit rows,
 * 170,000 events; the 100,000-entry watchlist stays that size). Default 0.2.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { INestApplication } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AdminService } from '../../src/admin/admin.service';
import { WatchlistsRepository } from '../../src/watchlists/watchlists.repository';
import { createApp } from '../../src/shell/app-factory';
import { AppConfig } from '../../src/config/app-config';
import { validateEnvironment } from '../../src/config/environment';
import { migrate } from '../../src/database/database-runtime';
import { startEmbeddedPostgres, temporaryDataDir } from '../../src/database/embedded-postgres';
import { postmasterPid, treeCpuMicros, treeDeltaMicros } from './cpu';
import { runMain } from './bench-main';

const SCALE = Number(process.env.GROW_SCALE ?? 0.2);
const CALLS = Number(process.env.GROW_CALLS ?? 200);

export interface GrowthSizes {
  ledgerOnAccount: number;
  accounts: number;
  ledgerPerAccount: number;
  bulkEntries: number;
  idempotencyKeys: number;
  watchlistEntries: number;
  auditRows: number;
  events: number;
}

export function sizes(scale: number): GrowthSizes {
  const n = (full: number) => Math.max(1, Math.round(full * scale));
  return {
    ledgerOnAccount: n(10_000_000),
    accounts: n(2000),
    ledgerPerAccount: 2000,
    bulkEntries: n(2_000_000),
    idempotencyKeys: n(1_000_000),
    watchlistEntries: 100_000,
    auditRows: n(50_000),
    events: n(170_000),
  };
}

/**
 * Grows the database with one INSERT … SELECT generate_series per table. `account` is the measured
 * account (its ledger, its big watchlist, its events); the others are new accounts of the `grow-bulk` plan.
 */
export async function grow(db: Client, account: string, size: GrowthSizes, log: (line: string) => void): Promise<void> {
  const step = async (what: string, sql: string, params: unknown[] = []) => {
    const started = performance.now();
    const result = await db.query(sql, params);
    log(`  ${what}: ${result.rowCount ?? 0} rows in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  };
  // Zero-amount charges keep balance = sum of the ledger on every account.
  const charge = (accountExpr: string, reference: string) =>
    `SELECT ${accountExpr}, 'CHARGE', 0, 0, ${reference}, '+44740012****', 'grow', now() - interval '2 days', now() - interval '2 days'`;
  await step(
    `ledger rows on the measured account`,
    `INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, phone, source, settled_at, created_at)
     ${charge('$1::uuid', `'grow:' || $1 || ':' || g`)} FROM generate_series(1, $2) g`,
    [account, size.ledgerOnAccount],
  );
  await step(
    'accounts',
    `INSERT INTO accounts (name, plan, balance) SELECT 'grow ' || g, 'enterprise', 0 FROM generate_series(1, $1) g`,
    [size.accounts],
  );
  await step(
    'ledger rows of the other accounts',
    `INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, phone, source, settled_at, created_at)
     ${charge('a.id', `'grow:' || a.id || ':' || g`)} FROM accounts a CROSS JOIN generate_series(1, $1) g WHERE a.name LIKE 'grow %'`,
    [size.ledgerPerAccount],
  );
  const jobs = Math.max(1, Math.round(size.bulkEntries / 1000));
  await step(
    'bulk jobs (completed, 1,000 entries each, on other accounts)',
    `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, csv_layout, source, chunks, completed_at)
     SELECT gen_random_uuid(), (SELECT id FROM accounts WHERE name = 'grow ' || (1 + g % $2)), 'completed', 1000, 1000, 0, 0, 0, '{}'::jsonb, '{"answer":[],"answered_by":[]}', 'grow', 1, now()
       FROM generate_series(1, $1) g`,
    [jobs, size.accounts],
  );
  await step(
    'bulk entries',
    // phone_hash: as the service writes it (an erasure finds the entry by it); SHA-256 stands in for the
    // keyed HMAC, which SQL cannot compute without the key (same width, same spread over the index).
    `INSERT INTO bulk_entries (job_id, idx, phone, chunk, result, done_at, phone_hash)
     SELECT j.id, i, p.phone, 0, '{"valid":true}'::json, now(), encode(sha256(convert_to(p.phone, 'UTF8')), 'hex')
       FROM bulk_jobs j CROSS JOIN generate_series(0, 999) i
      CROSS JOIN LATERAL (SELECT '+4474' || lpad((i * 7919 % 10000000)::text, 8, '0') AS phone) p WHERE j.source = 'grow'`,
  );
  await step(
    'idempotency keys (other accounts)',
    `INSERT INTO idempotency_keys (account_id, key, request_hash, status, response_status, response_body, completed_at, created_at)
     SELECT (SELECT id FROM accounts WHERE name = 'grow ' || (1 + g % $2)), 'grow-' || g, repeat('0', 64), 'completed', 200, '{}', now(), now()
       FROM generate_series(1, $1) g`,
    [size.idempotencyKeys, size.accounts],
  );
  const watchlist = randomUUID();
  await step(
    'a watchlist of the measured account',
    `INSERT INTO watchlists (id, account_id, name, interval, schedule_group, next_check_at) VALUES ($1, $2, 'grown', 'monthly', 'grow-nobody', now() + interval '30 days')`,
    [watchlist, account],
  );
  await step(
    'its entries (after other watchlists would have added theirs: ids interleave)',
    `INSERT INTO watchlist_entries (watchlist_id, phone) SELECT $1, '+4475' || lpad(g::text, 8, '0') FROM generate_series(1, $2) g`,
    [watchlist, size.watchlistEntries],
  );
  await step(
    'audit rows',
    `INSERT INTO admin_audit (actor, action, target_type, target_id, before, after)
     SELECT 'grow', 'account.update', 'account', (SELECT id::text FROM accounts WHERE name = 'grow ' || (1 + g % $2)), '{}', '{}' FROM generate_series(1, $1) g`,
    [size.auditRows, size.accounts],
  );
  await step(
    'account events (a tenth on the measured account, the rest on others; the last 40 days)',
    // As this version writes them: phone_hashes named ('{}': a low-balance alert names no number); a NULL
    // (no default) would be an event of the version before, which an erasure reads row by row.
    `INSERT INTO account_events (account_id, type, payload, state, created_at, phone_hashes)
     SELECT CASE WHEN g % 10 = 0 THEN $3::uuid ELSE (SELECT id FROM accounts WHERE name = 'grow ' || (1 + g % $2)) END,
            'balance.low', '{}', 'delivered', now() - (g % 40) * interval '1 day', '{}'::text[]
       FROM generate_series(1, $1) g`,
    [size.events, size.accounts, account],
  );
  // As a database that has lived with these rows would be: hint bits set, visibility map and statistics current.
  await step('VACUUM (ANALYZE)', 'VACUUM (ANALYZE)');
}

interface Route {
  name: string;
  call: () => Promise<Response>;
}

interface RouteCost {
  /** Median wall time of a call, ms (on a busy machine: read the CPU figure first). */
  medianMs: number;
  /** CPU of the PostgreSQL server (postmaster and backends) per call, µs: what the data's size changes. */
  postgresMicros: number;
}

async function measure(route: Route, postgresPid: number | undefined): Promise<RouteCost> {
  const call = async () => {
    const res = await route.call();
    await res.arrayBuffer();
    if (res.status >= 400) throw new Error(`${route.name}: HTTP ${res.status}`);
  };
  for (let i = 0; i < 10; i++) await call(); // warm-up: plans, caches, connections
  const before = postgresPid ? treeCpuMicros(postgresPid) : undefined;
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    await call();
    times.push(performance.now() - started);
  }
  const postgresMicros = before ? treeDeltaMicros(before, treeCpuMicros(postgresPid!)) / CALLS : NaN;
  times.sort((a, b) => a - b);
  return { medianMs: times[Math.floor(times.length / 2)], postgresMicros };
}

function routes(
  base: string,
  headers: Record<string, string>,
  adminHeaders: Record<string, string>,
  ids: { account: string; watchlist: () => string; threeEntries: string },
): Route[] {
  const get = (path: string, h = headers) => () => fetch(`${base}${path}`, { headers: h });
  let created = 0;
  let erased = 0;
  return [
    { name: 'POST /api/v1/filter (cache hit)', call: () => fetch(`${base}/api/v1/filter`, { method: 'POST', headers, body: JSON.stringify({ phone: '+447400123455' }) }) },
    { name: 'GET /api/v1/balance', call: get('/api/v1/balance') },
    { name: 'GET /api/v1/usage', call: get('/api/v1/usage') },
    { name: 'GET /api/v1/watchlists', call: get('/api/v1/watchlists') },
    { name: 'GET /api/v1/watchlists/{id} (the big one when grown)', call: () => get(`/api/v1/watchlists/${ids.watchlist()}`)() },
    { name: 'GET /api/v1/watchlists/{id} (a 3-entry list)', call: get(`/api/v1/watchlists/${ids.threeEntries}`) },
    {
      // A different number each call, one a grown bulk job holds (the entries' numbers are +4474 and 8 digits).
      name: 'POST /admin/v1/erasures',
      call: () => {
        erased++;
        const phone = `+4474${String((erased * 7919) % 10_000_000).padStart(8, '0')}`;
        return fetch(`${base}/admin/v1/erasures`, { method: 'POST', headers: { ...adminHeaders, 'Content-Type': 'application/json' }, body: JSON.stringify({ phone }) });
      },
    },
    {
      name: 'POST /api/v1/watchlists (2 numbers)',
      call: () => {
        created++;
        const phones = [`+4474009${String(created).padStart(5, '0')}5`, `+4474008${String(created).padStart(5, '0')}5`];
        return fetch(`${base}/api/v1/watchlists`, { method: 'POST', headers, body: JSON.stringify({ phones, interval: 'monthly' }) });
      },
    },
    { name: 'GET /api/v1/events', call: get('/api/v1/events') },
    { name: 'GET /api/v1/filter/bulk', call: get('/api/v1/filter/bulk') },
    { name: 'GET /metrics', call: get('/metrics', {}) },
    { name: 'GET /admin/v1/accounts/{id}/usage', call: get(`/admin/v1/accounts/${ids.account}/usage`, adminHeaders) },
  ];
}

/**
 * The PostgreSQL buffers (8 kB pages, cached or read) that a page of 3 entries of a watchlist touches, from
 * EXPLAIN (ANALYZE, BUFFERS) of the statement the repository sends: a count a busy machine does not blur.
 */
async function pageBuffers(app: INestApplication, db: Client, watchlistId: string): Promise<number> {
  const source = app.get(DataSource);
  const sent: Array<[string, unknown[]]> = [];
  const query = source.query.bind(source);
  source.query = (async (sql: string, parameters?: unknown[]) => {
    sent.push([sql, parameters ?? []]);
    return query(sql, parameters);
  }) as typeof source.query;
  try {
    await app.get(WatchlistsRepository).entries(watchlistId, 3, undefined);
  } finally {
    source.query = query;
  }
  const [sql, parameters] = sent[0];
  const { rows } = await db.query<{ 'QUERY PLAN': Array<{ Plan: { 'Shared Hit Blocks': number; 'Shared Read Blocks': number } }> }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`,
    parameters,
  );
  const plan = rows[0]['QUERY PLAN'][0].Plan;
  return plan['Shared Hit Blocks'] + plan['Shared Read Blocks'];
}

async function measureAll(list: Route[], postgresPid: number | undefined): Promise<Map<string, RouteCost>> {
  const costs = new Map<string, RouteCost>();
  for (const route of list) costs.set(route.name, await measure(route, postgresPid));
  return costs;
}

async function main(): Promise<void> {
  const size = sizes(SCALE);
  let url: string;
  let stop = async () => undefined as void;
  if (process.env.GROW_DATABASE_URL) {
    const name = `phone_filter_grow_${randomBytes(4).toString('hex')}`;
    const admin = new Client({ connectionString: process.env.GROW_DATABASE_URL });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    await admin.end();
    const target = new URL(process.env.GROW_DATABASE_URL);
    target.pathname = `/${name}`;
    url = target.toString();
    console.log(`database ${name} on GROW_DATABASE_URL's server (left in place for EXPLAIN: drop it when done)`);
  } else {
    const embedded = await startEmbeddedPostgres({ dataDir: temporaryDataDir('grow'), persistent: false });
    url = embedded.url;
    stop = () => embedded.stop();
  }
  await migrate(url);
  const adminToken = `grow-admin-${randomBytes(8).toString('hex')}`;
  const tag = randomBytes(4).toString('hex');
  const env = validateEnvironment({
    ...process.env,
    DATABASE_URL: url,
    LOG_LEVEL: 'warn',
    PROVIDER: 'sandbox',
    REDIS_URL: '',
    ADMIN_TOKEN: adminToken,
    BULK_QUEUE_NAME: `bulk-grow-${tag}`,
    WATCHLIST_SCHEDULE_GROUP: `grow-${tag}`,
    // Pollers slowed, so that PostgreSQL's CPU over a route's calls is the route's own (new work still wakes them).
    EVENTS_POLL_INTERVAL_MS: '30000',
    WATCHLIST_POLL_INTERVAL_MS: '30000',
  });
  const db = new Client({ connectionString: url });
  await db.connect();
  // The server's CPU is counted only when it is this run's own (embedded) and on this machine.
  const postgresPid = process.env.GROW_DATABASE_URL ? undefined : await postmasterPid(db);
  // A plan that lets the measured account watch the big watchlist and call without being throttled.
  await db.query(`INSERT INTO plans (name, "limit", window_seconds, max_watched_numbers) VALUES ('grow', 1000000, 1, 10000000)`);
  let app: INestApplication | undefined;
  try {
    app = await createApp(new AppConfig(env, url));
    await app.listen(0, '127.0.0.1');
    const base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    const account = await app.get(AdminService).createAccount({ name: 'measured', plan: 'grow', credits: 10_000_000 }, 'grow');
    const headers = { Authorization: `Bearer ${account.api_key}`, 'Content-Type': 'application/json' };
    const adminHeaders = { Authorization: `Bearer ${adminToken}` };
    // The empty database's own data: a small watchlist and a bulk job.
    const small = (await (await fetch(`${base}/api/v1/watchlists`, { method: 'POST', headers, body: JSON.stringify({ phones: ['+447400123455'], interval: 'monthly' }) })).json()) as { id: string };
    await fetch(`${base}/api/v1/filter/bulk`, { method: 'POST', headers, body: JSON.stringify({ phones: ['+447400123465', '+447400123475'] }) });
    const three = (await (
      await fetch(`${base}/api/v1/watchlists`, { method: 'POST', headers, body: JSON.stringify({ phones: ['+447400123485', '+447400123495', '+447400123405'], interval: 'monthly' }) })
    ).json()) as { id: string };
    let watchlist = small.id;
    const list = routes(base, headers, adminHeaders, { account: account.id, watchlist: () => watchlist, threeEntries: three.id });

    console.log(`empty database: ${CALLS} sequential calls per route`);
    const empty = await measureAll(list, postgresPid);
    console.log(`growing (GROW_SCALE=${SCALE}): ${JSON.stringify(size)}`);
    const started = performance.now();
    await grow(db, account.id, size, console.log);
    console.log(`grown in ${((performance.now() - started) / 60_000).toFixed(1)} min`);
    const [{ id }] = (await db.query<{ id: string }>(`SELECT id FROM watchlists WHERE name = 'grown'`)).rows;
    watchlist = id;
    const grown = await measureAll(list, postgresPid);

    console.log('\n| route | empty ms | grown ms | grown/empty | PostgreSQL µs/call empty | grown | grown/empty |');
    console.log('|---|---:|---:|---:|---:|---:|---:|');
    for (const [name, before] of empty) {
      const after = grown.get(name)!;
      console.log(
        `| ${name} | ${before.medianMs.toFixed(2)} | ${after.medianMs.toFixed(2)} | ${(after.medianMs / before.medianMs).toFixed(2)} | ` +
          `${Math.round(before.postgresMicros)} | ${Math.round(after.postgresMicros)} | ${(after.postgresMicros / before.postgresMicros).toFixed(2)} |`,
      );
    }
    const tables = await db.query<{ table: string; size: string }>(
      `SELECT relname AS table, pg_size_pretty(pg_total_relation_size(oid)) AS size FROM pg_class
        WHERE relname IN ('ledger_entries', 'bulk_entries', 'idempotency_keys', 'watchlist_entries', 'account_events', 'admin_audit') ORDER BY relname`,
    );
    const indexes = await db.query<{ index: string; size: string }>(
      `SELECT indexrelid::regclass::text AS index, pg_size_pretty(pg_relation_size(indexrelid)) AS size FROM pg_index WHERE indrelid = 'ledger_entries'::regclass ORDER BY 1`,
    );
    const [bigPage, smallPage] = [await pageBuffers(app, db, watchlist), await pageBuffers(app, db, three.id)];
    console.log(`\nbuffers a 3-entry watchlist page touches: the 100,000-entry list ${bigPage}, the 3-entry list ${smallPage} (${(bigPage / smallPage).toFixed(2)}×)`);
    console.log(`sizes: ${tables.rows.map((r) => `${r.table} ${r.size}`).join(', ')}`);
    console.log(`ledger_entries indexes: ${indexes.rows.map((r) => `${r.index} ${r.size}`).join(', ')}`);
  } finally {
    await app?.close();
    await db.end();
    await stop();
  }
}

if (require.main === module) runMain(main);
