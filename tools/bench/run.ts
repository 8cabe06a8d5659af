/**
 * `npm run bench`: throughput and latency of POST /api/v1/filter against a bare NestJS route, in one run,
 * in both cache configurations: in memory (no REDIS_URL) and as a fleet runs it (REDIS_URL: the shared
 * cache and rate-limit counts in Redis; REDIS_URL when given, otherwise a redis-server the bench starts
 * on a free port). Servers run as child processes, compiled and started as in production (`npm run
 * start:prod`: the same Node flags, and the Node running the bench); the load generator (autocannon)
 * runs in a process of its own, on the same cores. Each scenario is measured after a warm-up (JIT,
 * caches, connections). Every scenario, and every warm-up, has numbers of its own (a block of
 * +4474BB…, see load-generator.ts) and each service run its own cache key prefix: no scenario finds
 * answers an earlier one cached. Uses DATABASE_URL when set, otherwise an embedded PostgreSQL in a
 * temporary folder. `npm run bench` builds first; BENCH_BULK=0 skips the bulk and watchlist jobs,
 * BENCH_FIXED_RATE=0 the fixed-rate rows (fixed-rate.ts, also `npm run bench:fixed-rate` alone),
 * BENCH_FAILOVER=0 the failover rows (failover.ts, also `npm run bench:failover` alone). The machine's
 * load average is printed before and after: figures from a busy machine are not comparable.
 */
import { randomBytes } from 'node:crypto';
import { freePort } from '../../src/common/net';
import { migrate } from '../../src/database/database-runtime';
import { benchDatabase, loadAverage, runMain } from './bench-main';
import { BulkBenchmarkResult, runBulkBenchmark } from './bulk';
import { phoneInBlock } from './load-generator';
import { CONNECTIONS, createBenchAccount, DURATION_SECONDS, Figures, load, WARM_UP_SECONDS } from './service-load';
import { describeFailoverRows, FailoverRow, runFailoverBenchmark } from './failover';
import { benchRedis, PRODUCTION_NODE_FLAGS, startChild, stopChild } from './processes';
import { describeWatchlistResult, runWatchlistBenchmark, WatchlistBenchmarkResult } from './watchlist';
import { runFixedRate, summarize } from './fixed-rate';

const ADMIN_TOKEN = `bench-admin-${randomBytes(8).toString('hex')}`;

/** Number blocks handed out in order: no two scenarios (nor a warm-up and its scenario) share a number. */
let lastBlock = 9;
function freshBlock(): number {
  lastBlock += 1;
  return lastBlock;
}

/** A cache configuration of the service: the environment that selects it and how its rows are named. */
interface CacheConfig {
  name: string;
  env: Record<string, string>;
}

interface ServiceScenarios {
  label: string;
  env: Record<string, string>;
  /** Also measure the cache-hit scenario (one number, answered from the cache after its first call). */
  hit: boolean;
}

async function benchService(databaseUrl: string, cache: CacheConfig, service: ServiceScenarios): Promise<Figures[]> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const prefixes = { CACHE_KEY_PREFIX: `bench:${randomBytes(4).toString('hex')}:`, RATE_LIMIT_REDIS_PREFIX: `bench-rl:${randomBytes(4).toString('hex')}:` };
  const env = { DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'warn', ...prefixes, ...cache.env, ...service.env };
  const child = await startChild('src/main.ts', [], env, `${baseUrl}/health/live`);
  try {
    const apiKey = await createBenchAccount(databaseUrl, baseUrl, ADMIN_TOKEN);
    const request = { url: `${baseUrl}/api/v1/filter`, method: 'POST' as const, headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' } };
    const label = `${service.label}, ${cache.name}`;
    const figures: Figures[] = [];
    if (service.hit) {
      const hit = JSON.stringify({ phone: phoneInBlock(freshBlock(), 123_456), source: 'bench' });
      await load('warm-up', { ...request, body: hit, durationSeconds: WARM_UP_SECONDS });
      figures.push(await load(`${label}: /filter cache hit (one number)`, { ...request, body: hit }));
    } else {
      await load('warm-up', { ...request, phoneBlock: freshBlock(), durationSeconds: WARM_UP_SECONDS });
    }
    figures.push(await load(`${label}: /filter cache miss (new number each call)`, { ...request, phoneBlock: freshBlock() }));
    return figures;
  } finally {
    await stopChild(child);
  }
}

async function benchBare(): Promise<Figures> {
  const barePort = await freePort();
  const bare = await startChild('tools/bench/bare-app.ts', [], { PORT: String(barePort) }, /listening/);
  try {
    const url = `http://127.0.0.1:${barePort}/bare`;
    await load('warm-up', { url, durationSeconds: WARM_UP_SECONDS });
    return await load('bare NestJS route (GET)', { url });
  } finally {
    await stopChild(bare);
  }
}

async function main(): Promise<void> {
  const database = await benchDatabase();
  const databaseUrl = database.url;
  const stopDatabase = database.stop;
  const redis = await benchRedis();
  console.log(
    `Phone Filter benchmark: ${CONNECTIONS} connections, ${DURATION_SECONDS} s per scenario after ${WARM_UP_SECONDS} s of warm-up, ` +
      `${process.env.DATABASE_URL ? 'DATABASE_URL' : 'embedded PostgreSQL'}, Redis: ${redis.origin}, node ${process.version} ${PRODUCTION_NODE_FLAGS.join(' ')}, ` +
      `load average ${loadAverage()}`,
  );
  await migrate(databaseUrl);

  const caches: CacheConfig[] = [
    { name: 'in memory', env: { REDIS_URL: '' } },
    { name: 'REDIS_URL', env: { REDIS_URL: redis.url } },
  ];
  const figures: Figures[] = [];
  let bulk: BulkBenchmarkResult | undefined;
  let watchlist: WatchlistBenchmarkResult | undefined;
  let failover: FailoverRow[] | undefined;
  try {
    figures.push(await benchBare());
    for (const cache of caches) figures.push(...(await benchService(databaseUrl, cache, { label: 'sandbox', env: { PROVIDER: 'sandbox' }, hit: true })));

    const simulatorPort = await freePort();
    const simulator = await startChild('tools/upstream-simulator/main.ts', ['--port', String(simulatorPort), '--latency-ms', '100'], {}, /listening/);
    const hlrLookups = {
      label: 'hlr-lookups (simulator, 100 ms)',
      env: { PROVIDER: 'hlr-lookups', HLR_LOOKUPS_URL: `http://127.0.0.1:${simulatorPort}`, HLR_LOOKUPS_KEY: 'sim-key', HLR_LOOKUPS_SECRET: 'sim-secret' },
      hit: false,
    };
    try {
      for (const cache of caches) figures.push(...(await benchService(databaseUrl, cache, hlrLookups)));
    } finally {
      await stopChild(simulator);
    }
    if (process.env.BENCH_FAILOVER !== '0') failover = await runFailoverBenchmark({ databaseUrl, adminToken: ADMIN_TOKEN, freshBlock });
    if (process.env.BENCH_BULK !== '0') {
      bulk = await runBulkBenchmark({ env: { DATABASE_URL: databaseUrl } });
      watchlist = await runWatchlistBenchmark({ env: { DATABASE_URL: databaseUrl } });
    }
  } finally {
    await redis.stop();
    await stopDatabase();
  }

  // Every ratio is against the bare route of this same run.
  const bare = figures[0].requestsPerSecond;
  console.log('\n| scenario | req/s | p50 ms | p99 ms | non-2xx | vs bare route |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const f of figures) {
    console.log(`| ${f.scenario} | ${f.requestsPerSecond} | ${f.p50} | ${f.p99} | ${f.non2xx} | ${((100 * f.requestsPerSecond) / bare).toFixed(1)}% |`);
  }
  if (failover) console.log(`\n${describeFailoverRows(failover).join('\n')}`);
  if (bulk) {
    console.log(
      `\nbulk job: ${bulk.entries} distinct numbers, upstream latency ${bulk.latencyMs} ms, BULK_CONCURRENCY=${bulk.concurrency}: ` +
        `${(bulk.wallMs / 1000).toFixed(2)} s wall, ${bulk.entriesPerSecond} entries/s, ${bulk.failed} failed lookups`,
    );
  }
  if (watchlist) console.log(describeWatchlistResult(watchlist));
  if (process.env.BENCH_FIXED_RATE !== '0') {
    // Its own private servers (see fixed-rate.ts): CPU per call per process at a fixed offered rate.
    console.log(`\n${summarize(await runFixedRate()).join('\n')}`);
  }
  console.log(`\nload average at the end: ${loadAverage()}`);
}

runMain(main);
