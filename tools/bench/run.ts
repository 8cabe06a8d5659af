/**
 * `npm run bench`: throughput and latency of POST /api/v1/filter against a bare NestJS route, in one run.
 * Servers run as child processes, compiled and started as in production (`npm run start:prod`: the
 * same Node flags); the load generator (autocannon) runs in a process of its own, on the same cores. Each scenario is
 * measured after a warm-up (JIT, caches, connections). Uses DATABASE_URL when set, otherwise an
 * embedded PostgreSQL in a temporary folder. `npm run bench` builds first.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { freePort } from '../../src/common/net';
import { migrate } from '../../src/database/database-runtime';
import { startEmbeddedPostgres, temporaryDataDir } from '../../src/database/embedded-postgres';
import { BulkBenchmarkResult, runBulkBenchmark } from './bulk';
import { describeWatchlistResult, runWatchlistBenchmark, WatchlistBenchmarkResult } from './watchlist';
import type { LoadFigures, LoadRequest } from './load-generator';

const ROOT = resolve(__dirname, '../..');
const DURATION_SECONDS = Number(process.env.BENCH_DURATION ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const WARM_UP_SECONDS = Number(process.env.BENCH_WARM_UP ?? 5);
const ADMIN_TOKEN = `bench-admin-${randomBytes(8).toString('hex')}`;
/** The Node flags of `npm run start:prod` (package.json), so the service runs here as it does there. */
const PRODUCTION_NODE_FLAGS = productionNodeFlags();

interface Figures extends LoadFigures {
  scenario: string;
}


function productionNodeFlags(): string[] {
  const scripts = (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const match = /^node ((?:--\S+ )*)dist\/src\/main$/.exec(scripts['start:prod']);
  if (!match) throw new Error(`start:prod is not "node [flags] dist/src/main": ${scripts['start:prod']}`);
  return match[1].trim().split(' ').filter(Boolean);
}

/** Starts a compiled server script (dist/) and resolves once `ready` answers (a URL polled, or a line of output). */
async function startChild(script: string, args: string[], env: Record<string, string>, ready: RegExp | string): Promise<ChildProcess> {
  const compiled = resolve(ROOT, 'dist', script.replace(/\.ts$/, '.js'));
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing: build first (npm run build)`);
  const child = spawn(process.execPath, [...PRODUCTION_NODE_FLAGS, compiled, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  await new Promise<void>((resolveReady, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready instanceof RegExp && ready.test(output)) resolveReady();
    };
    if (typeof ready === 'string') {
      const poll = () =>
        fetch(ready).then(
          (res) => (res.ok ? resolveReady() : setTimeout(poll, 200)),
          () => setTimeout(poll, 200),
        );
      poll();
    }
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${script} exited (${code}):\n${output}`)));
  });
  return child;
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
  child.kill('SIGTERM');
  await exited;
}

/** Runs the load generator (a process of its own, see load-generator.ts) and returns its figures. */
async function load(scenario: string, request: Omit<LoadRequest, 'connections' | 'durationSeconds'> & { durationSeconds?: number }): Promise<Figures> {
  const generator = spawn(process.execPath, [resolve(ROOT, 'dist/tools/bench/load-generator.js'), JSON.stringify({ connections: CONNECTIONS, durationSeconds: DURATION_SECONDS, ...request })], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  generator.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolveExit) => generator.once('exit', resolveExit));
  if (code !== 0) throw new Error(`the load generator failed (${code}) for ${scenario}`);
  return { scenario, ...(JSON.parse(output) as LoadFigures) };
}

async function createBenchAccount(databaseUrl: string, baseUrl: string): Promise<string> {
  const db = new Client({ connectionString: databaseUrl });
  await db.connect();
  await db.query(
    `INSERT INTO plans (name, "limit", window_seconds) VALUES ('bench', 10000000, 1)
     ON CONFLICT (name) DO UPDATE SET "limit" = EXCLUDED."limit"`,
  );
  await db.end();
  const res = await fetch(`${baseUrl}/admin/v1/accounts`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `bench ${new Date().toISOString()}`, plan: 'bench', credits: 1_000_000_000 }),
  });
  if (res.status !== 201) throw new Error(`creating the bench account failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { api_key: string }).api_key;
}

async function benchService(databaseUrl: string, label: string, extraEnv: Record<string, string>): Promise<Figures[]> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = { DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'warn', ...extraEnv };
  const service = await startChild('src/main.ts', [], env, `${baseUrl}/health/live`);
  try {
    const apiKey = await createBenchAccount(databaseUrl, baseUrl);
    const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    const url = `${baseUrl}/api/v1/filter`;
    const hit = JSON.stringify({ phone: '+447400123456', source: 'bench' });
    await load('warm-up', { url, method: 'POST', headers, body: hit, durationSeconds: WARM_UP_SECONDS });
    const figures = [await load(`${label}: /filter cache hit (one number)`, { url, method: 'POST', headers, body: hit })];
    figures.push(await load(`${label}: /filter cache miss (new number each call)`, { url, method: 'POST', headers, uniquePhones: true }));
    return figures;
  } finally {
    await stopChild(service);
  }
}

async function main(): Promise<void> {
  let databaseUrl = process.env.DATABASE_URL;
  let stopDatabase: () => Promise<void> = async () => undefined;
  if (!databaseUrl) {
    const embedded = await startEmbeddedPostgres({ dataDir: temporaryDataDir('bench'), persistent: false });
    databaseUrl = embedded.url;
    stopDatabase = () => embedded.stop();
  }
  console.log(
    `Phone Filter benchmark: ${CONNECTIONS} connections, ${DURATION_SECONDS} s per scenario after ${WARM_UP_SECONDS} s of warm-up, ` +
      `${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded PostgreSQL'}, node ${process.version} ${PRODUCTION_NODE_FLAGS.join(' ')}`,
  );
  await migrate(databaseUrl);

  const figures: Figures[] = [];
  let bulk: BulkBenchmarkResult | undefined;
  let watchlist: WatchlistBenchmarkResult | undefined;
  try {
    const barePort = await freePort();
    const bare = await startChild('tools/bench/bare-app.ts', [], { PORT: String(barePort) }, /listening/);
    try {
      const url = `http://127.0.0.1:${barePort}/bare`;
      await load('warm-up', { url, durationSeconds: WARM_UP_SECONDS });
      figures.push(await load('bare NestJS route (GET)', { url }));
    } finally {
      await stopChild(bare);
    }

    figures.push(...(await benchService(databaseUrl, 'sandbox', { PROVIDER: 'sandbox' })));

    const simulatorPort = await freePort();
    const simulator = await startChild('tools/upstream-simulator/main.ts', ['--port', String(simulatorPort), '--latency-ms', '100'], {}, /listening/);
    try {
      figures.push(
        ...(await benchService(databaseUrl, 'hlr-lookups (simulator, 100 ms)', {
          PROVIDER: 'hlr-lookups',
          HLR_LOOKUPS_URL: `http://127.0.0.1:${simulatorPort}`,
          HLR_LOOKUPS_KEY: 'sim-key',
          HLR_LOOKUPS_SECRET: 'sim-secret',
        })),
      );
    } finally {
      await stopChild(simulator);
    }
    bulk = await runBulkBenchmark({ env: { DATABASE_URL: databaseUrl } });
    watchlist = await runWatchlistBenchmark({ env: { DATABASE_URL: databaseUrl } });
  } finally {
    await stopDatabase();
  }

  const bare = figures[0].requestsPerSecond;
  console.log('\n| scenario | req/s | p50 ms | p99 ms | non-2xx | vs bare route |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const f of figures) {
    console.log(`| ${f.scenario} | ${f.requestsPerSecond} | ${f.p50} | ${f.p99} | ${f.non2xx} | ${((100 * f.requestsPerSecond) / bare).toFixed(1)}% |`);
  }
  if (bulk) {
    console.log(
      `\nbulk job: ${bulk.entries} distinct numbers, upstream latency ${bulk.latencyMs} ms, BULK_CONCURRENCY=${bulk.concurrency}: ` +
        `${(bulk.wallMs / 1000).toFixed(2)} s wall, ${bulk.entriesPerSecond} entries/s, ${bulk.failed} failed lookups`,
    );
  }
  if (watchlist) console.log(describeWatchlistResult(watchlist));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
