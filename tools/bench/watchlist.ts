import { benchNumbers, withBenchService } from './in-process-service';

export interface WatchlistBenchmarkResult {
  numbers: number;
  latencyMs: number;
  concurrency: number;
  /** From POST /api/v1/watchlists/{id}/check to the round reading completed. */
  wallMs: number;
  numbersPerSecond: number;
  failed: number;
}

interface RoundView {
  last_round: { round: number; status: string; failed: number } | null;
}

/**
 * One watchlist round of `numbers` distinct numbers against the upstream simulator through the real
 * hlr-lookups adapter over HTTP. The watchlist's first round (the baseline, at creation) is left to
 * finish first; the figure is the second round, started with POST /check: every number live again.
 */
export async function runWatchlistBenchmark(options: { numbers?: number; latencyMs?: number; env?: Record<string, string> } = {}): Promise<WatchlistBenchmarkResult> {
  const { numbers = 10_000, latencyMs = 200, env = {} } = options;
  return withBenchService({ latencyMs, credits: numbers * 4 * 3, env }, async ({ config, base, headers }) => {
    const created = await fetch(`${base}/api/v1/watchlists`, { method: 'POST', headers, body: JSON.stringify({ phones: benchNumbers(numbers), interval: 'monthly' }) });
    if (created.status !== 201) throw new Error(`create: HTTP ${created.status} ${await created.text()}`);
    const { id } = (await created.json()) as { id: string };
    const roundDone = async (round: number): Promise<RoundView> => {
      for (;;) {
        const view = (await (await fetch(`${base}/api/v1/watchlists/${id}?limit=1`, { headers })).json()) as RoundView;
        if (view.last_round?.round === round && view.last_round.status === 'completed') return view;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await roundDone(1);
    const started = performance.now();
    const check = await fetch(`${base}/api/v1/watchlists/${id}/check`, { method: 'POST', headers });
    if (check.status !== 202) throw new Error(`check: HTTP ${check.status} ${await check.text()}`);
    const done = await roundDone(2);
    const wallMs = performance.now() - started;
    return {
      numbers,
      latencyMs,
      concurrency: config.watchlists.concurrency,
      wallMs: Math.round(wallMs),
      numbersPerSecond: Math.round((numbers / wallMs) * 1000),
      failed: done.last_round?.failed ?? 0,
    };
  });
}

export function describeWatchlistResult(result: WatchlistBenchmarkResult): string {
  return (
    `watchlist round: ${result.numbers} numbers, upstream latency ${result.latencyMs} ms, WATCHLIST_CONCURRENCY=${result.concurrency}: ` +
    `${(result.wallMs / 1000).toFixed(2)} s wall, ${result.numbersPerSecond} numbers/s, ${result.failed} failed lookups`
  );
}

if (require.main === module) {
  runWatchlistBenchmark()
    .then((result) => {
      console.log(describeWatchlistResult(result));
      process.exit(result.failed > 0 ? 1 : 0);
    })
    .catch((error: unknown) => {
      console.error('watchlist benchmark failed:', error);
      process.exit(1);
    });
}
