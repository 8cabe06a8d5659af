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
  /** Instead of `body`: a distinct valid UK mobile number per request, so every lookup misses the cache. */
  uniquePhones?: boolean;
  connections: number;
  durationSeconds: number;
}

export interface LoadFigures {
  requestsPerSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
}

function uniqueNumbers(): () => string {
  let next = Math.floor(Math.random() * 50_000);
  return () => {
    next = (next + 1) % 100_000;
    if (next % 10_000 < 5) next += 5; // the test numbers ending 0000-0004 simulate failures
    return `+4474001${String(next).padStart(5, '0')}`;
  };
}

async function main(): Promise<void> {
  const request = JSON.parse(process.argv[2]) as LoadRequest;
  const next = uniqueNumbers();
  const result = await autocannon({
    url: request.url,
    method: request.method ?? 'GET',
    headers: request.headers,
    body: request.body,
    connections: request.connections,
    duration: request.durationSeconds,
    ...(request.uniquePhones
      ? { requests: [{ setupRequest: (r: autocannon.Request) => ({ ...r, body: JSON.stringify({ phone: next(), source: 'bench' }) }) }] }
      : {}),
  });
  const figures: LoadFigures = {
    requestsPerSecond: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
  };
  process.stdout.write(JSON.stringify(figures));
}

void main();
