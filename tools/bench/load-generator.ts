/**
 * The benchmark's load generator, in a process of its own: it measures latency on its own event loop,
 * so it must not share one (and a garbage collector) with the orchestrator, which has the app's modules
 * and the bulk benchmark loaded. Reads a LoadRequest (JSON) as its argument, prints the LoadFigures
 * (JSON) on stdout. As fast as answered: autocannon. At a fixed rate: `paced` (below), an even open loop.
 */
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import type { Clock } from '../../src/common/clock';

export interface LoadRequest {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /**
   * Instead of `body`: a distinct valid UK mobile number per request, all in this block (see
   * `phoneInBlock`), so every lookup misses the cache. The orchestrator gives each scenario its own block.
   */
  phoneBlock?: number;
  /** Authorization headers taken in turn, one per request (calls of several accounts); none: `headers` alone. */
  authorizations?: string[];
  connections: number;
  durationSeconds: number;
  /** Requests per second offered by all connections together; none: as fast as answered. */
  overallRate?: number;
  /**
   * How a fixed rate is offered: `even` (default), one request every 1/rate s (see `paced`); `autocannon`,
   * autocannon's overallRate, which sends the second's requests in a burst (kept to compare with).
   */
  pacing?: 'even' | 'autocannon';
}

export interface LoadFigures {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  p99_9: number;
  /** Requests answered (any status); paced: the last ones' answers after the run's end included. */
  requests: number;
  /** Paced only: how late the generator sent its requests, p99 in ms (its own stalls: a starved generator sends in bursts). */
  sendLateP99?: number;
  non2xx: number;
  errors: number;
}

/** Blocks 00-99 of +4474BB NNNNNN: a million valid UK mobile numbers each. */
export function phoneInBlock(block: number, index: number): string {
  if (!Number.isInteger(block) || block < 0 || block > 99) throw new Error(`phone block ${block} is not 0-99`);
  let n = index % 1_000_000;
  if (n % 10_000 < 5) n += 5; // the test numbers ending 0000-0004 simulate failures
  return `+4474${String(block).padStart(2, '0')}${String(n).padStart(6, '0')}`;
}

function uniqueNumbers(block: number): () => string {
  let next = 0;
  return () => phoneInBlock(block, next++);
}

/** What a request varies by: its body, its headers. */
type Shape = (r: autocannon.Request) => autocannon.Request;

function uniqueBodies(block: number): Shape {
  const next = uniqueNumbers(block);
  return (r) => ({ ...r, body: JSON.stringify({ phone: next(), source: 'bench' }) });
}

/** Each request with the next Authorization header in turn. */
function takingTurns(authorizations: string[]): Shape {
  let next = 0;
  return (r) => ({ ...r, headers: { ...r.headers, Authorization: authorizations[next++ % authorizations.length] } });
}

/** How long the answers of a paced run's last requests are waited for before they count as errors. */
const PACED_DRAIN_MS = 10_000;

/**
 * An open loop at an even pace: request i is due at start + i/rate and sent then (at most a timer's
 * tick late, ~1 ms) on one of `connections` keep-alive connections, queued for one if all are busy.
 * undici's Pool takes the first free connection, so at a low rate most requests ride a few of them.
 * Its latency counts from when it was sent (its wait for a connection included), not from when it was
 * due, so the timer's lateness is not in it; sending never waits for an answer, so a slow server cannot
 * delay the requests behind it out of the count. The generator's own stalls (its GC, a starved core)
 * do delay sends: `sendLateP99` reports them. As autocannon did, the percentiles are of the 2xx
 * answers, and `requestsPerSecond` counts the answers received by the run's end (a server answering
 * slower than the rate scores under it, even if it catches up after).
 *
 * autocannon's overallRate offers a different load: each connection sends back to back until it has
 * made its share of the second, then waits for the next second. At 1,000/s over 20 connections, 91%
 * of the requests arrive in the first 100 ms of each second (a saturating burst, then silence), and its
 * histogram adds the synthetic samples of a sender 1 ms apart to every answer slower than 1 ms.
 */
export async function paced(request: LoadRequest): Promise<LoadFigures> {
  const shape = shapeOf(request);
  const url = new URL(request.url);
  const pool = new Pool(url.origin, { connections: request.connections, pipelining: 1 });
  const rate = request.overallRate!;
  const total = Math.round(rate * request.durationSeconds);
  const start = performance.now() + 5;
  const end = start + request.durationSeconds * 1000;
  const latencies: number[] = [];
  const lateness: number[] = [];
  let answered = 0;
  let answeredInRun = 0;
  let non2xx = 0;
  let errors = 0;
  let over = false; // past the drain: what still settles (destroyed by the pool) is counted once, below
  const inFlight = new Set<Promise<void>>();
  const send = (due: number) => {
    const shaped = shape
      ? shape({ method: request.method ?? 'GET', path: url.pathname, headers: { ...request.headers }, body: request.body } as autocannon.Request)
      : { headers: request.headers, body: request.body };
    const sentAt = performance.now();
    lateness.push(sentAt - due);
    const outcome = pool
      .request({ path: url.pathname + url.search, method: request.method ?? 'GET', headers: shaped.headers as Record<string, string>, body: shaped.body as string | undefined })
      .then(async (res) => {
        await res.body.dump();
        if (over) return;
        const at = performance.now();
        answered++;
        if (at <= end) answeredInRun++;
        if (res.statusCode >= 200 && res.statusCode < 300) latencies.push(at - sentAt);
        else non2xx++;
      })
      .catch(() => {
        if (!over) errors++;
      })
      .finally(() => inFlight.delete(outcome));
    inFlight.add(outcome);
  };
  await paceSends({ total, rate, start }, PERFORMANCE_CLOCK, send);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.all([...inFlight]), new Promise<void>((timedOut) => (timer = setTimeout(timedOut, PACED_DRAIN_MS)))]);
  clearTimeout(timer);
  over = true;
  errors += inFlight.size; // never answered
  await pool.destroy();
  const latency = percentiles(latencies);
  return {
    requestsPerSecond: Math.round(answeredInRun / request.durationSeconds),
    p50: latency(0.5),
    p99: latency(0.99),
    p99_9: latency(0.999),
    requests: answered,
    non2xx,
    errors,
    sendLateP99: percentiles(lateness)(0.99),
  };
}

/** The time of the pacing: what a Clock offers (test/helpers/manual-clock.ts drives it in the tests). */
export type PaceClock = Pick<Clock, 'now' | 'timer'>;

/** performance.now() (sub-millisecond) and Node's timers, kept alive: the generator waits on nothing else. */
const PERFORMANCE_CLOCK: PaceClock = {
  now: () => performance.now(),
  timer: (ms, fire) => {
    const handle = setTimeout(fire, ms);
    return { cancel: () => clearTimeout(handle) };
  },
};

/**
 * The even schedule: request i is due at `start` + i/rate (ms, on `clock`) and sent as soon as a timer
 * finds it due, with its due time; a timer that fires late sends every request that fell due meanwhile,
 * in order, at once (none skipped, none early). Resolves once all `total` are sent.
 */
export function paceSends(schedule: { total: number; rate: number; start: number }, clock: PaceClock, send: (due: number) => void): Promise<void> {
  const { total, rate, start } = schedule;
  const intervalMs = 1000 / rate;
  return new Promise<void>((sentAll) => {
    let sent = 0;
    const tick = () => {
      const now = clock.now();
      for (; sent < total && start + sent * intervalMs <= now; sent++) send(start + sent * intervalMs);
      if (sent < total) clock.timer(Math.max(0, start + sent * intervalMs - clock.now()), tick);
      else sentAll();
    };
    if (total === 0) sentAll();
    else clock.timer(Math.max(0, start - clock.now()), tick);
  });
}

/** The values sorted once; then each share's nearest rank, in ms to two decimals (NaN when there is none). */
function percentiles(values: number[]): (share: number) => number {
  const sorted = [...values].sort((a, b) => a - b);
  return (share) => (sorted.length === 0 ? NaN : round2(sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)]));
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

/** What varies from one request to the next (a number per request, the accounts in turn), if anything. */
function shapeOf(request: LoadRequest): Shape | undefined {
  const shapes: Shape[] = [];
  if (request.phoneBlock !== undefined) shapes.push(uniqueBodies(request.phoneBlock));
  if (request.authorizations?.length) shapes.push(takingTurns(request.authorizations));
  return shapes.length === 0 ? undefined : (r) => shapes.reduce((shaped, shape) => shape(shaped), r);
}

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2]) as LoadRequest;
  if (request.overallRate && request.pacing !== 'autocannon') {
    process.stdout.write(JSON.stringify(await paced(request)));
    return;
  }
  const setupRequest = shapeOf(request);
  const result = await autocannon({
    url: request.url,
    method: request.method ?? 'GET',
    headers: request.headers,
    body: request.body,
    connections: request.connections,
    duration: request.durationSeconds,
    ...(request.overallRate ? { overallRate: request.overallRate } : {}),
    ...(setupRequest ? { requests: [{ setupRequest }] } : {}),
  });
  const figures: LoadFigures = {
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    p99_9: result.latency.p99_9,
    requests: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
  };
  process.stdout.write(JSON.stringify(figures));
}

if (require.main === module) void main();
