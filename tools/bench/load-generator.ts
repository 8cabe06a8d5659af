/**
 * The benchmark's load generator, in a process of its own: autocannon measures latency on its own
 * event loop, so it must not share one (and a garbage collector) with the orchestrator, which has
 * the app's modules and the bulk benchmark loaded. Reads a LoadRequest (JSON) as its argument, prints
 * the LoadFigures (JSON) on stdout.
 */
import autocannon from 'autocannon';

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
  connections: number;
  durationSeconds: number;
  /** Requests per second offered by all connections together (autocannon's overallRate); none: as fast as answered. */
  overallRate?: number;
}

export interface LoadFigures {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  p99_9: number;
  /** Requests answered in the run (any status). */
  requests: number;
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

function uniqueBodies(block: number): (r: autocannon.Request) => autocannon.Request {
  const next = uniqueNumbers(block);
  return (r) => ({ ...r, body: JSON.stringify({ phone: next(), source: 'bench' }) });
}

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2]) as LoadRequest;
  const result = await autocannon({
    url: request.url,
    method: request.method ?? 'GET',
    headers: request.headers,
    body: request.body,
    connections: request.connections,
    duration: request.durationSeconds,
    ...(request.overallRate ? { overallRate: request.overallRate } : {}),
    ...(request.phoneBlock !== undefined ? { requests: [{ setupRequest: uniqueBodies(request.phoneBlock) }] } : {}),
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
