/**
 * `npm run bench:fixed-rate` (and the last part of `npm run bench`): cost per call and latency at a
 * fixed offered rate, well under saturation: the figures a fleet is sized with (docs/benchmark.md).
 *
 * For each run, runtime (BENCH_NODES, default "20,24": Node majors; another major than this one's is
 * found with `.ci/node-runtime N`) and build (this checkout, and BENCH_BEFORE_ROOT's build beside it
 * when given, alternated), everything is private to the measurement: an embedded PostgreSQL in a
 * temporary folder (migrated by the service as it starts), a redis-server, the service (sandbox
 * provider, REDIS_URL) and the bare app. At each rate (BENCH_RATES, default 1000,3000 requests/s, one
 * every 1/rate s on up to 20 connections: see BENCH_PACING; BENCH_FIXED_DURATION s after BENCH_FIXED_WARM_UP s
 * of warm-up) it measures the bare NestJS POST, the PostgreSQL floor (one INSERT of a paid call's ledger
 * row through a pool, see bare-app.ts) and a cache-hit POST /api/v1/filter. CPU per call is each
 * process's utime+stime over the run divided by the calls answered: the service, PostgreSQL (the
 * postmaster and all its backends) and Redis. The service's event-loop delay histogram over the run
 * comes from a preloaded probe (loop-delay-probe.ts).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Client } from 'pg';
import { freePort } from '../../src/common/net';
import { startEmbeddedPostgres, temporaryDataDir } from '../../src/database/embedded-postgres';
import { postmasterPid, processCpuMicros, processIoCalls, treeCpuMicros, treeDeltaMicros } from './cpu';
import { phoneInBlock, type LoadFigures, type LoadRequest } from './load-generator';
import type { LoopDelay } from './loop-delay-probe';
import { privateRedis, ROOT, startChild, stopChild } from './processes';

const CONNECTIONS = 20;
const RATES = (process.env.BENCH_RATES ?? '1000,3000').split(',').map(Number);
const DURATION_SECONDS = Number(process.env.BENCH_FIXED_DURATION ?? 15);
const WARM_UP_SECONDS = Number(process.env.BENCH_FIXED_WARM_UP ?? 3);
/** Runs of each runtime and build: 3, or 4 beside a `before` build (each build goes first in as many pairs, ABBA). */
const RUNS = Number(process.env.BENCH_RUNS ?? (process.env.BENCH_BEFORE_ROOT ? 4 : 3));
/** The share of the offered rate a run must have been answered at to count in the summary. */
const KEEP_SHARE = Number(process.env.BENCH_KEEP_SHARE ?? 0.9);
/** `even` (default): one request every 1/rate s; `autocannon`: its overallRate, a burst each second (load-generator.ts). */
const PACING = (process.env.BENCH_PACING ?? 'even') as NonNullable<LoadRequest['pacing']>;
if (PACING !== 'even' && PACING !== 'autocannon') throw new Error(`BENCH_PACING must be even or autocannon, not ${PACING}`);
const ADMIN_TOKEN = `bench-admin-${randomBytes(8).toString('hex')}`;
const PROBE = resolve(ROOT, 'dist/tools/bench/loop-delay-probe.js');
/** Node flags for the service alone, before the probe and the production ones (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`). */
const SERVICE_NODE_FLAGS = (process.env.BENCH_SERVICE_NODE_FLAGS ?? '').split(' ').filter(Boolean);
/** The routes measured (default all): `bare`, `floor`, `trips`, `filter`, `accounts`. */
const ROUTES = new Set((process.env.BENCH_ROUTES ?? 'bare,floor,trips,filter,accounts').split(','));
/** The accounts whose calls take turns in the `accounts` route (one account's charges are written one statement at a time). */
const SPREAD_ACCOUNTS = 20;
/**
 * BENCH_PIN=1: the measured server (the service, the bare app) alone on CPU 0, everything else (this
 * process, the load generator, PostgreSQL, Redis) on the others, so that a call's latency is not its
 * wait for a core the load generator or the database holds. Needs `taskset` and 2 CPUs or more.
 */
const PIN = process.env.BENCH_PIN === '1';

function pinMeasured(pid: number): void {
  if (PIN) execFileSync('taskset', ['-a', '-pc', '0', String(pid)], { stdio: 'ignore' });
}

function pinRest(): void {
  if (!PIN) return;
  const cpus = availableParallelism();
  if (cpus < 2) throw new Error('BENCH_PIN=1 needs 2 CPUs or more');
  execFileSync('taskset', ['-a', '-pc', `1-${cpus - 1}`, String(process.pid)], { stdio: 'ignore' });
}

type Route = 'bare POST' | 'PostgreSQL floor (INSERT)' | 'round-trip floor (Redis, INSERT)' | 'cache-hit /filter' | 'cache-hit /filter, 20 accounts';
const ROUTE_KEYS: Record<Route, string> = {
  'bare POST': 'bare',
  'PostgreSQL floor (INSERT)': 'floor',
  'round-trip floor (Redis, INSERT)': 'trips',
  'cache-hit /filter': 'filter',
  'cache-hit /filter, 20 accounts': 'accounts',
};

export interface FixedRateRow {
  run: number;
  runtime: string;
  build: string;
  rate: number;
  route: Route;
  figures: LoadFigures;
  /** Microseconds of CPU per call answered. */
  serviceCpu: number;
  postgresCpu: number;
  redisCpu: number;
  /** Bytes of WAL PostgreSQL wrote per call (pg_stat_wal). */
  walBytes: number;
  loop: LoopDelay | undefined;
  /** Per call answered: bytes allocated on the JavaScript heap, and bytes promoted to the old generation. */
  allocatedBytes: number | undefined;
  promotedBytes: number | undefined;
  /**
   * The service's read and write system calls per call answered (/proc/<pid>/io: socket reads and writes
   * included): what a call costs in round trips and flushes. Fewer as calls queue (more of them share a
   * write), so compared at the same rate and a similar p50. Undefined for a row read back from a log that
   * has no such column.
   */
  syscalls?: { reads: number; writes: number };
}

interface Runtime {
  label: string;
  node: string;
}

interface Build {
  label: string;
  root: string;
}

function runtimes(): Runtime[] {
  return (process.env.BENCH_NODES ?? '20,24').split(',').map((major) => {
    if (process.versions.node.startsWith(`${major}.`)) return { label: `Node ${process.versions.node}`, node: process.execPath };
    const bin = execFileSync(resolve(ROOT, '.ci/node-runtime'), [major]).toString().trim();
    const node = join(bin, 'node');
    return { label: `Node ${execFileSync(node, ['--version']).toString().trim().slice(1)}`, node };
  });
}

/**
 * BENCH_BEFORE_ROOT: a built checkout measured beside this one. BENCH_AFTER_ROOT (with it): another built
 * checkout measured as `after` instead of this one, to split a span of commits (the bench's tools stay this
 * checkout's).
 */
function builds(): Build[] {
  const before = process.env.BENCH_BEFORE_ROOT;
  if (!before) return [{ label: 'this', root: ROOT }];
  const after = process.env.BENCH_AFTER_ROOT ?? ROOT;
  for (const [name, root] of [['BENCH_BEFORE_ROOT', before], ['BENCH_AFTER_ROOT', after]]) {
    if (!existsSync(resolve(root, 'dist/src/main.js'))) throw new Error(`${name} ${root} is not built (npm run build there)`);
  }
  return [
    { label: 'before', root: resolve(before) },
    { label: 'after', root: resolve(after) },
  ];
}

async function offer(request: Omit<LoadRequest, 'connections'>): Promise<LoadFigures> {
  const generator = spawn(process.execPath, [resolve(ROOT, 'dist/tools/bench/load-generator.js'), JSON.stringify({ connections: CONNECTIONS, pacing: PACING, ...request })], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  generator.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((done) => generator.once('exit', done));
  if (code !== 0) throw new Error(`the load generator failed (${code})`);
  return JSON.parse(output) as LoadFigures;
}

interface Measured {
  database: string;
  servicePid: number;
  postgresPid: number;
  redisPid: number;
  loopFile: string;
}

/** One scenario at one rate: warm-up, then the measured run with the CPU of every process around it. */
async function measure(on: Measured, request: Omit<LoadRequest, 'connections' | 'durationSeconds'>): Promise<Omit<FixedRateRow, 'run' | 'runtime' | 'build' | 'route' | 'rate'>> {
  await offer({ ...request, durationSeconds: WARM_UP_SECONDS });
  process.kill(on.servicePid, 'SIGUSR2'); // a new loop-delay histogram from here
  await new Promise((done) => setTimeout(done, 50));
  const walBefore = await walBytes(on.database);
  const before = { service: processCpuMicros(on.servicePid), postgres: treeCpuMicros(on.postgresPid), redis: processCpuMicros(on.redisPid), io: processIoCalls(on.servicePid) };
  const figures = await offer({ ...request, durationSeconds: DURATION_SECONDS });
  const after = { service: processCpuMicros(on.servicePid), postgres: treeCpuMicros(on.postgresPid), redis: processCpuMicros(on.redisPid), io: processIoCalls(on.servicePid) };
  const walAfter = await walBytes(on.database);
  process.kill(on.servicePid, 'SIGUSR2');
  await new Promise((done) => setTimeout(done, 100));
  const loop = existsSync(on.loopFile) ? (JSON.parse(readFileSync(on.loopFile, 'utf8')) as LoopDelay) : undefined;
  const perCall = (micros: number) => Math.round(micros / Math.max(1, figures.requests));
  const perCallTenths = (count: number) => Math.round((count * 10) / Math.max(1, figures.requests)) / 10;
  return {
    figures,
    serviceCpu: perCall(after.service - before.service),
    postgresCpu: perCall(treeDeltaMicros(before.postgres, after.postgres)),
    redisCpu: perCall(after.redis - before.redis),
    walBytes: perCall(walAfter - walBefore),
    loop,
    allocatedBytes: loop?.heap ? perCall(loop.heap.allocated) : undefined,
    promotedBytes: loop?.heap ? perCall(loop.heap.promoted) : undefined,
    syscalls: { reads: perCallTenths(after.io.reads - before.io.reads), writes: perCallTenths(after.io.writes - before.io.writes) },
  };
}

async function walBytes(url: string): Promise<number> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    return Number((await db.query<{ bytes: string }>('SELECT wal_bytes AS bytes FROM pg_stat_wal')).rows[0].bytes);
  } finally {
    await db.end();
  }
}

async function benchAccount(url: string, baseUrl: string): Promise<{ id: string; apiKey: string }> {
  const db = new Client({ connectionString: url });
  await db.connect();
  await db.query(`INSERT INTO plans (name, "limit", window_seconds) VALUES ('bench', 10000000, 1) ON CONFLICT (name) DO UPDATE SET "limit" = EXCLUDED."limit"`);
  await db.end();
  const res = await fetch(`${baseUrl}/admin/v1/accounts`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'fixed-rate bench', plan: 'bench', credits: 1_000_000_000 }),
  });
  if (res.status !== 201) throw new Error(`creating the bench account failed: ${res.status} ${await res.text()}`);
  const body = (await res.json()) as { id: string; api_key: string };
  return { id: body.id, apiKey: body.api_key };
}

/** Every rate for one runtime and build, on servers of their own. */
async function benchOne(run: number, runtime: Runtime, build: Build): Promise<FixedRateRow[]> {
  const database = await startEmbeddedPostgres({ dataDir: temporaryDataDir('bench-fixed'), persistent: false });
  const redis = await privateRedis();
  const loopFile = join(tmpdir(), `bench-loop-${randomBytes(4).toString('hex')}.json`);
  const probe = { node: runtime.node, nodeFlags: ['-r', PROBE] };
  const stops: Array<() => Promise<void>> = [() => database.stop(), () => redis.stop()];
  try {
    const port = await freePort();
    const baseUrl = `http://127.0.0.1:${port}`;
    const service = await startChild(
      'src/main.ts',
      [],
      { DATABASE_URL: database.url, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'warn', PROVIDER: 'sandbox', REDIS_URL: redis.url, BENCH_LOOP_DELAY_FILE: loopFile },
      `${baseUrl}/health/live`,
      { ...probe, nodeFlags: [...SERVICE_NODE_FLAGS, ...probe.nodeFlags], root: build.root },
    );
    stops.unshift(() => stopChild(service));
    pinMeasured(service.pid!);
    const account = await benchAccount(database.url, baseUrl);
    // The floors' rows go to an account of their own: the /filter account's balance stays its ledger's sum.
    const floorAccount = await benchAccount(database.url, baseUrl);
    const spread = ROUTES.has('accounts') ? [account, ...(await Promise.all(Array.from({ length: SPREAD_ACCOUNTS - 1 }, () => benchAccount(database.url, baseUrl))))] : [];
    const barePort = await freePort();
    const bareLoopFile = `${loopFile}.bare`;
    const bare = await startChild(
      'tools/bench/bare-app.ts',
      [],
      { PORT: String(barePort), BENCH_LEDGER_DATABASE_URL: database.url, BENCH_LEDGER_ACCOUNT: floorAccount.id, BENCH_REDIS_URL: redis.url, BENCH_LOOP_DELAY_FILE: bareLoopFile },
      /listening/,
      probe,
    );
    stops.unshift(() => stopChild(bare));
    pinMeasured(bare.pid!);
    const admin = new Client({ connectionString: database.url });
    await admin.connect();
    const postgresPid = await postmasterPid(admin).finally(() => admin.end());
    const json = { 'Content-Type': 'application/json' };
    const rows: FixedRateRow[] = [];
    for (const rate of RATES) {
      const body = JSON.stringify({ phone: phoneInBlock(90 + run, 123_456), source: 'bench' });
      const onBare = { database: database.url, servicePid: bare.pid!, postgresPid, redisPid: redis.pid, loopFile: bareLoopFile };
      const scenarios: Array<[FixedRateRow['route'], Measured, Omit<LoadRequest, 'connections' | 'durationSeconds'>]> = [
        ['bare POST', onBare, { url: `http://127.0.0.1:${barePort}/bare`, method: 'POST', headers: json, body, overallRate: rate }],
        ['PostgreSQL floor (INSERT)', onBare, { url: `http://127.0.0.1:${barePort}/bare/ledger`, method: 'POST', headers: json, body, overallRate: rate }],
        ['round-trip floor (Redis, INSERT)', onBare, { url: `http://127.0.0.1:${barePort}/bare/limit-ledger`, method: 'POST', headers: json, body, overallRate: rate }],
        [
          'cache-hit /filter',
          { database: database.url, servicePid: service.pid!, postgresPid, redisPid: redis.pid, loopFile },
          { url: `${baseUrl}/api/v1/filter`, method: 'POST', headers: { ...json, Authorization: `Bearer ${account.apiKey}` }, body, overallRate: rate },
        ],
        [
          'cache-hit /filter, 20 accounts',
          { database: database.url, servicePid: service.pid!, postgresPid, redisPid: redis.pid, loopFile },
          { url: `${baseUrl}/api/v1/filter`, method: 'POST', headers: json, authorizations: spread.map((a) => `Bearer ${a.apiKey}`), body, overallRate: rate },
        ],
      ];
      for (const [route, on, request] of scenarios) {
        if (!ROUTES.has(ROUTE_KEYS[route])) continue;
        const row = { run, runtime: runtime.label, build: build.label, rate, route, ...(await measure(on, request)) };
        console.error(describe(row));
        rows.push(row);
      }
    }
    return rows;
  } finally {
    for (const stop of stops) await stop();
    rmSync(loopFile, { force: true });
    rmSync(`${loopFile}.bare`, { force: true });
  }
}

function describe(row: FixedRateRow): string {
  const f = row.figures;
  const loop = row.loop ? `${row.loop.p99} / ${row.loop.max}` : '—';
  const server = row.loop?.server ? `${row.loop.server.p50} / ${row.loop.server.p99} / ${row.loop.server.p99_9}` : '—';
  const heap = row.loop?.heap;
  const gc = heap ? `${row.allocatedBytes} / ${row.promotedBytes} (+${Math.round(heap.allocatedOld / Math.max(1, row.figures.requests))} old) | ${heap.scavenges} / ${heap.majorGcs} | ${heap.scavengeMax.toFixed(1)} / ${heap.majorMax.toFixed(1)}` : '— | — | —';
  return (
    `| ${row.run} | ${row.runtime} | ${row.build} | ${row.rate} | ${row.route} | ${f.requestsPerSecond} | ${f.p50} | ${f.p99} | ${f.p99_9} | ` +
    `${row.serviceCpu} | ${row.postgresCpu} | ${row.redisCpu} | ${row.walBytes} | ${loop} | ${gc} | ${f.non2xx + f.errors} | ${server} | ${f.sendLateP99 ?? '—'} | ${syscalls(row)} |`
  );
}

/** The service's read / write system calls per call, or "—". */
const syscalls = (row: FixedRateRow) => (row.syscalls ? `${row.syscalls.reads} / ${row.syscalls.writes}` : '—');

/** `a / b` as "1.5×", or "—" when either side had no run kept. */
const ratio = (a: number, b: number) => (Number.isFinite(a / b) && b > 0 ? `${(a / b).toFixed(2)}×` : '—');

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];

/**
 * The medians over the runs, with the goals' ratios (issue 26): /filter against the bare POST, PostgreSQL
 * against its floor; and the p99 of the floors and of /filter against the bare POST's and the round-trip
 * floor's (what the two round trips alone cost in latency on this machine).
 */
export function summarize(rows: FixedRateRow[]): string[] {
  const lines = [
    '| runtime | build | rate/s | route | runs kept | answered/s | p50 ms | p99 ms | p99.9 ms | service µs/call | PostgreSQL µs/call | Redis µs/call | WAL B/call | heap B/call allocated | promoted | in the server p50 / p99 ms | p99 vs bare | p99 vs round-trip floor | service CPU vs bare | PostgreSQL vs floor | service syscalls/call read / write |',
    '|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  // A run whose offered rate was not answered (a busy machine: the generator or the server starved of CPU)
  // measures contention, not cost: left out, and the row says how many runs it keeps.
  const delivered = rows.filter((r) => r.figures.requestsPerSecond >= KEEP_SHARE * r.rate);
  const keys = [...new Set(rows.map((r) => `${r.runtime}\u0000${r.build}\u0000${r.rate}`))];
  for (const key of keys) {
    const [runtime, build, rate] = key.split('\u0000');
    const of = (route: Route) => delivered.filter((r) => r.runtime === runtime && r.build === build && String(r.rate) === rate && r.route === route);
    const m = (route: Route, pick: (r: FixedRateRow) => number) => median(of(route).map(pick));
    for (const route of Object.keys(ROUTE_KEYS) as Route[]) {
      if (of(route).length === 0) continue;
      const paid = route.startsWith('cache-hit /filter');
      const p99Against = (yardstick: Route) => (route === yardstick ? '' : ratio(m(route, (r) => r.figures.p99), m(yardstick, (r) => r.figures.p99)));
      const ratios = [
        p99Against('bare POST'),
        paid ? p99Against('round-trip floor (Redis, INSERT)') : '',
        paid ? ratio(m(route, (r) => r.serviceCpu), m('bare POST', (r) => r.serviceCpu)) : '',
        paid ? ratio(m(route, (r) => r.postgresCpu), m('PostgreSQL floor (INSERT)', (r) => r.postgresCpu)) : '',
      ].join(' | ');
      lines.push(
        `| ${runtime} | ${build} | ${rate} | ${route} | ${of(route).length}/${rows.filter((r) => r.runtime === runtime && r.build === build && String(r.rate) === rate && r.route === route).length} | ${m(route, (r) => r.figures.requestsPerSecond)} | ${m(route, (r) => r.figures.p50)} | ` +
          `${m(route, (r) => r.figures.p99)} | ${m(route, (r) => r.figures.p99_9)} | ${m(route, (r) => r.serviceCpu)} | ${m(route, (r) => r.postgresCpu)} | ` +
          `${m(route, (r) => r.redisCpu)} | ${m(route, (r) => r.walBytes)} | ${m(route, (r) => r.allocatedBytes ?? NaN)} | ${m(route, (r) => r.promotedBytes ?? NaN)} | ` +
          `${m(route, (r) => r.loop?.server?.p50 ?? NaN)} / ${m(route, (r) => r.loop?.server?.p99 ?? NaN)} | ${ratios} | ` +
          `${m(route, (r) => r.syscalls?.reads ?? NaN)} / ${m(route, (r) => r.syscalls?.writes ?? NaN)} |`,
      );
    }
  }
  return lines;
}

/**
 * Every run, runtime and build, alternated (run 1: each runtime, each build; then run 2 ...), the builds in
 * turn first and second (ABBA): the second run of a pair measured worse in 5 of 6 pairs whichever build
 * it was (cause not found), which a fixed order charged to `after` alone.
 */
export async function runFixedRate(): Promise<FixedRateRow[]> {
  pinRest();
  console.error(
    `fixed rate: ${RATES.join(', ')}/s offered over ${CONNECTIONS} connections, ${DURATION_SECONDS} s after ${WARM_UP_SECONDS} s of warm-up, ${RUNS} run(s)${PIN ? '; the measured server on CPU 0, the rest on the others' : ''}`,
  );
  console.error(
    '| run | runtime | build | rate/s | route | answered/s | p50 ms | p99 ms | p99.9 ms | service µs/call | PostgreSQL µs/call | Redis µs/call | WAL B/call | loop delay p99 / max ms | heap B/call allocated / promoted | scavenges / major GCs | longest scavenge / major GC ms | non-2xx+errors | in the server p50 / p99 / p99.9 ms | sent late p99 ms | service syscalls/call read / write |',
  );
  console.error('|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|---:|---|---:|---|');
  const rows: FixedRateRow[] = [];
  const nodes = runtimes();
  for (let run = 1; run <= RUNS; run++) {
    for (const runtime of nodes) {
      const order = run % 2 === 1 ? builds() : builds().reverse();
      for (const build of order) rows.push(...(await withRetries(() => benchOne(run, runtime, build))));
    }
  }
  return rows;
}

/** A free port can be taken by another program before a server binds it (a shared machine): start over then. */
async function withRetries<T>(work: () => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (error) {
      if (attempt >= attempts) throw error;
      console.error(`attempt ${attempt} failed, starting over: ${(error as Error).message}`);
    }
  }
}

if (require.main === module) {
  runFixedRate().then(
    (rows) => {
      console.log(summarize(rows).join('\n'));
      process.exit(0);
    },
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
