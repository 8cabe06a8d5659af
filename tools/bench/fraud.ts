/**
 * `npm run bench:fraud` (docs/benchmark.md "SMS pumping", docs/sms-pumping.md): how well the risk verdict
 * tells pumping from real sign-ups, and what it costs.
 *
 * 1. Detection: one simulated day (fraud-traffic.ts: legitimate sign-ups, most verified through
 *    feedback, and four attacks) asked of the service in this process, one ask at a time in time order:
 *    the verdict and the feedback of POST /api/v1/risk and /risk/feedback (RiskService.verdictOf,
 *    RiskRecords.feedback: the route's work without HTTP and billing, which part 2 measures), its Clock
 *    reading the simulated time (a day replayed in minutes; the windows, the grace and the feedback
 *    delays are the day's). Prints per attack the share flagged or blocked after its first 20 asks, and
 *    the legitimate sign-ups' shares flagged and blocked. BENCH_FRAUD_DUMP=file: every verdict, as JSON.
 * 2. Cost: the built service in a process of its own (as bench:fixed-rate, CPU from /proc), at a steady
 *    rate (BENCH_FRAUD_RATE, default 200/s, BENCH_FRAUD_DURATION s after a warm-up), a cache-hit
 *    /filter and /risk (a distinct number each call: every ask writes new counter entries) taking turns
 *    in BENCH_RUNS runs: p50/p99 and the service's, PostgreSQL's and Redis's CPU per call.
 *
 * Private servers for everything: an embedded PostgreSQL in a temporary folder and a redis-server.
 * BENCH_FRAUD_LEGITIMATE (default 10000) legitimate sign-ups; BENCH_FRAUD_SEED (default 1).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Client } from 'pg';
import { AdminService } from '../../src/admin/admin.service';
import { Clock } from '../../src/common/clock';
import { freePort } from '../../src/common/net';
import { AppConfig } from '../../src/config/app-config';
import { validateEnvironment } from '../../src/config/environment';
import { migrate } from '../../src/database/database-runtime';
import { startEmbeddedPostgres, temporaryDataDir } from '../../src/database/embedded-postgres';
import { RiskRecords } from '../../src/risk/risk-records';
import { RiskService } from '../../src/risk/risk.service';
import { createApp } from '../../src/shell/app-factory';
import { postmasterPid, processCpuMicros, treeCpuMicros, treeDeltaMicros } from './cpu';
import { ATTACKS, type Actor, type Ask, trafficDay } from './fraud-traffic';
import type { LoadFigures, LoadRequest } from './load-generator';
import { privateRedis, ROOT, startChild, stopChild } from './processes';

const LEGITIMATE = Number(process.env.BENCH_FRAUD_LEGITIMATE ?? 10_000);
const SEED = Number(process.env.BENCH_FRAUD_SEED ?? 1);
const RATE = Number(process.env.BENCH_FRAUD_RATE ?? 200);
const DURATION_SECONDS = Number(process.env.BENCH_FRAUD_DURATION ?? 20);
const WARM_UP_SECONDS = 3;
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
/** Asks of each attack let through before its share counts: an attack's first few numbers look like anyone's. */
const FIRST = 20;
const ADMIN_TOKEN = `bench-admin-${randomBytes(8).toString('hex')}`;
const PLAN = `INSERT INTO plans (name, "limit", window_seconds) VALUES ('bench', 10000000, 1) ON CONFLICT (name) DO UPDATE SET "limit" = EXCLUDED."limit"`;

interface Tally {
  asks: number;
  counted: number;
  flagged: number;
  blocked: number;
  /** Reason codes of the counted asks that were flagged or blocked (the strongest reason each). */
  reasons: Map<string, number>;
}

const percent = (part: number, whole: number, digits = 1) => `${((100 * part) / Math.max(1, whole)).toFixed(digits)}%`;

/** Part 1: the simulated day through the route; a tally per actor. */
async function detection(databaseUrl: string): Promise<Map<Actor, Tally>> {
  const day = trafficDay(SEED, LEGITIMATE);
  // The counters in memory: they expire by the Clock (Redis would expire keys by its own time), and the
  // verdicts are the same as with Redis (one logic over either store, test/medium/risk/counters).
  const raw = { ...process.env, DATABASE_URL: databaseUrl, REDIS_URL: '', LOG_LEVEL: 'error', PROVIDER: 'sandbox' };
  const config = new AppConfig(validateEnvironment(raw), databaseUrl);
  const app = await createApp(config);
  const start = Date.now();
  let simulated = start;
  // The day is replayed in minutes: every service holds this one Clock, which reads the simulated time.
  app.get(Clock).now = () => simulated;
  await app.init();
  try {
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    await db.query(PLAN).finally(() => db.end());
    const account = await app.get(AdminService).createAccount({ name: 'fraud bench', plan: 'bench', credits: 1_000_000_000 }, 'bench');
    const risk = app.get(RiskService);
    const records = app.get(RiskRecords);
    type Event = { at: number; ask: Ask; feedback: boolean };
    const events: Event[] = day.flatMap((ask) => [{ at: ask.at, ask, feedback: false }, ...(ask.feedback ? [{ at: ask.at + ask.feedback.delayMs, ask, feedback: true }] : [])]);
    events.sort((a, b) => a.at - b.at || Number(a.feedback) - Number(b.feedback));
    const tallies = new Map<Actor, Tally>();
    const dump: object[] | undefined = process.env.BENCH_FRAUD_DUMP ? [] : undefined;
    const seenOf = new Map<Actor, number>();
    let done = 0;
    for (const { at, ask, feedback } of events) {
      simulated = start + at;
      if (feedback) {
        if (!(await records.feedback(account.id, ask.phone, ask.feedback!.verified))) throw new Error('feedback on a number not asked');
        continue;
      }
      const verdict = await risk.verdictOf(account.id, { e164: ask.phone, source: ask.source, event: 'signup', ip: ask.ip });
      dump?.push({ at, actor: ask.actor, phone: ask.phone, source: ask.source, score: verdict.score, recommendation: verdict.recommendation, reasons: verdict.reasons.map((r) => r.code) });
      if (++done % 2000 === 0) console.error(`  ${done} asks…`);
      const index = seenOf.get(ask.actor) ?? 0;
      seenOf.set(ask.actor, index + 1);
      const tally = tallies.get(ask.actor) ?? { asks: 0, counted: 0, flagged: 0, blocked: 0, reasons: new Map() };
      tallies.set(ask.actor, tally);
      tally.asks += 1;
      if (ask.actor !== 'legitimate' && index < FIRST) continue;
      tally.counted += 1;
      if (verdict.recommendation === 'allow') continue;
      if (verdict.recommendation === 'flag') tally.flagged += 1;
      else tally.blocked += 1;
      const code = verdict.reasons[0]?.code ?? '-';
      tally.reasons.set(code, (tally.reasons.get(code) ?? 0) + 1);
    }
    if (dump) writeFileSync(process.env.BENCH_FRAUD_DUMP!, JSON.stringify(dump));
    return tallies;
  } finally {
    await app.close();
  }
}

function detectionTable(tallies: Map<Actor, Tally>): string[] {
  const lines = [
    `| traffic | asks | counted | flagged | blocked | flagged or blocked | strongest reasons (counted asks not allowed) |`,
    '|---|---:|---:|---:|---:|---:|---|',
  ];
  for (const actor of ['legitimate', ...ATTACKS] as Actor[]) {
    const t = tallies.get(actor);
    if (!t) continue;
    const reasons = [...t.reasons.entries()].sort((a, b) => b[1] - a[1]).map(([code, n]) => `${code} ${n}`).join(', ');
    const counted = actor === 'legitimate' ? `${t.counted} (all)` : `${t.counted} (after the first ${FIRST})`;
    lines.push(`| ${actor} | ${t.asks} | ${counted} | ${percent(t.flagged, t.counted, 2)} | ${percent(t.blocked, t.counted, 2)} | ${percent(t.flagged + t.blocked, t.counted, 2)} | ${reasons || '—'} |`);
  }
  return lines;
}

async function offer(request: Omit<LoadRequest, 'connections'>): Promise<LoadFigures> {
  const generator = spawn(process.execPath, [resolve(ROOT, 'dist/tools/bench/load-generator.js'), JSON.stringify({ connections: 20, ...request })], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  generator.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((done) => generator.once('exit', done));
  if (code !== 0) throw new Error(`the load generator failed (${code})`);
  return JSON.parse(output) as LoadFigures;
}

interface CostRow {
  route: string;
  figures: LoadFigures;
  serviceCpu: number;
  postgresCpu: number;
  redisCpu: number;
}

/** Part 2: cache-hit /filter and /risk at one steady rate, taking turns, on the built service. */
async function cost(databaseUrl: string, redis: { url: string; pid: number }): Promise<CostRow[]> {
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = { DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1', ADMIN_TOKEN, LOG_LEVEL: 'warn', PROVIDER: 'sandbox', REDIS_URL: redis.url };
  const service = await startChild('src/main.ts', [], env, `${baseUrl}/health/live`);
  try {
    const db = new Client({ connectionString: databaseUrl });
    await db.connect();
    const postgresPid = await postmasterPid(db);
    await db.query(PLAN).finally(() => db.end());
    const res = await fetch(`${baseUrl}/admin/v1/accounts`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'fraud bench cost', plan: 'bench', credits: 1_000_000_000 }),
    });
    if (res.status !== 201) throw new Error(`creating the bench account failed: ${res.status}`);
    const headers = { Authorization: `Bearer ${((await res.json()) as { api_key: string }).api_key}`, 'Content-Type': 'application/json' };
    const rows: CostRow[] = [];
    for (let run = 1; run <= RUNS; run++) {
      const routes: Array<[string, Omit<LoadRequest, 'connections' | 'durationSeconds'>]> = [
        ['cache-hit /filter', { url: `${baseUrl}/api/v1/filter`, method: 'POST', headers, body: JSON.stringify({ phone: '+447400123456', source: 'bench' }), overallRate: RATE }],
        ['/risk', { url: `${baseUrl}/api/v1/risk`, method: 'POST', headers, phoneBlock: 40 + run, overallRate: RATE }],
      ];
      for (const [route, request] of run % 2 === 0 ? routes.reverse() : routes) {
        await offer({ ...request, durationSeconds: WARM_UP_SECONDS, ...(request.phoneBlock !== undefined ? { phoneBlock: request.phoneBlock + 50 } : {}) });
        const before = { service: processCpuMicros(service.pid!), postgres: treeCpuMicros(postgresPid), redis: processCpuMicros(redis.pid) };
        const figures = await offer({ ...request, durationSeconds: DURATION_SECONDS });
        const after = { service: processCpuMicros(service.pid!), postgres: treeCpuMicros(postgresPid), redis: processCpuMicros(redis.pid) };
        const perCall = (micros: number) => Math.round(micros / Math.max(1, figures.requests));
        const row = { route, figures, serviceCpu: perCall(after.service - before.service), postgresCpu: perCall(treeDeltaMicros(before.postgres, after.postgres)), redisCpu: perCall(after.redis - before.redis) };
        console.error(`  run ${run} ${route}: ${figures.requestsPerSecond}/s p50 ${figures.p50} p99 ${figures.p99} ms, service ${row.serviceCpu} µs/call, non-2xx ${figures.non2xx + figures.errors}`);
        rows.push(row);
      }
    }
    return rows;
  } finally {
    await stopChild(service);
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];

function costTable(rows: CostRow[]): string[] {
  const lines = [
    `| route (${RATE}/s, medians of ${RUNS} runs) | answered/s | p50 ms | p99 ms | service µs/call | PostgreSQL µs/call | Redis µs/call | all three µs/call | non-2xx |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const m = (route: string, pick: (r: CostRow) => number) => median(rows.filter((r) => r.route === route).map(pick));
  for (const route of ['cache-hit /filter', '/risk']) {
    lines.push(
      `| ${route} | ${m(route, (r) => r.figures.requestsPerSecond)} | ${m(route, (r) => r.figures.p50)} | ${m(route, (r) => r.figures.p99)} | ${m(route, (r) => r.serviceCpu)} | ` +
        `${m(route, (r) => r.postgresCpu)} | ${m(route, (r) => r.redisCpu)} | ${m(route, (r) => r.serviceCpu + r.postgresCpu + r.redisCpu)} | ${m(route, (r) => r.figures.non2xx + r.figures.errors)} |`,
    );
  }
  const ratio = (pick: (r: CostRow) => number) => (m('/risk', pick) / Math.max(1e-9, m('cache-hit /filter', pick))).toFixed(2);
  lines.push('', `/risk against cache-hit /filter: p99 ${ratio((r) => r.figures.p99)}× (goal ≤ 2×), CPU per call ${ratio((r) => r.serviceCpu + r.postgresCpu + r.redisCpu)}× (goal ≤ 1×; service alone ${ratio((r) => r.serviceCpu)}×)`);
  return lines;
}

async function main(): Promise<void> {
  const database = await startEmbeddedPostgres({ dataDir: temporaryDataDir('bench-fraud'), persistent: false });
  const redis = await privateRedis();
  try {
    await migrate(database.url);
    const skipDetection = process.env.BENCH_FRAUD_PARTS === 'cost';
    const skipCost = process.env.BENCH_FRAUD_PARTS === 'detection';
    if (!skipDetection) {
      console.error(`detection: one simulated day, ${LEGITIMATE} legitimate sign-ups and four attacks (seed ${SEED})`);
      const started = Date.now();
      const tallies = await detection(database.url);
      console.log(detectionTable(tallies).join('\n'));
      console.error(`  (${Math.round((Date.now() - started) / 1000)} s)`);
    }
    if (!skipCost) {
      console.error(`cost: ${RATE}/s, ${DURATION_SECONDS} s after ${WARM_UP_SECONDS} s of warm-up, ${RUNS} run(s) each`);
      console.log('\n' + costTable(await cost(database.url, redis)).join('\n'));
    }
  } finally {
    await redis.stop();
    await database.stop();
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
