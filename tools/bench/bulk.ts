import { benchNumbers, withBenchService } from './in-process-service';

export interface BulkBenchmarkOptions {
  /** Numbers in the job (distinct, so the cache does not help). Default 1,000. */
  entries: number;
  /** Simulator latency per upstream request. Default 200 ms. */
  latencyMs: number;
  /** Extra environment for the service (e.g. BULK_CONCURRENCY). */
  env: Record<string, string>;
}

export interface BulkBenchmarkResult {
  entries: number;
  latencyMs: number;
  concurrency: number;
  wallMs: number;
  entriesPerSecond: number;
  failed: number;
}

/**
 * One bulk job against the upstream simulator through the real hlr-lookups adapter over HTTP:
 * the wall time from POST /api/v1/filter/bulk to the job reading `completed`.
 */
export async function runBulkBenchmark(options: Partial<BulkBenchmarkOptions> = {}): Promise<BulkBenchmarkResult> {
  const { entries = 1000, latencyMs = 200, env = {} } = options;
  return withBenchService({ latencyMs, credits: entries * 10, env }, async ({ config, base, headers }) => {
    const phones = benchNumbers(entries);
    const started = performance.now();
    const submitted = await fetch(`${base}/api/v1/filter/bulk`, { method: 'POST', headers, body: JSON.stringify({ phones, source: 'bench' }) });
    if (submitted.status !== 202) throw new Error(`submit: HTTP ${submitted.status} ${await submitted.text()}`);
    const { id } = (await submitted.json()) as { id: string };
    // Poll the list (no results in it) so that polling costs little next to the job.
    for (;;) {
      const page = (await (await fetch(`${base}/api/v1/filter/bulk?limit=1`, { headers })).json()) as { jobs: Array<{ id: string; status: string }> };
      if (page.jobs[0]?.id === id && page.jobs[0].status === 'completed') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const wallMs = performance.now() - started;
    const job = (await (await fetch(`${base}/api/v1/filter/bulk/${id}`, { headers })).json()) as { results: Array<{ error?: unknown }> };
    return {
      entries,
      latencyMs,
      concurrency: config.bulk.concurrency,
      wallMs: Math.round(wallMs),
      entriesPerSecond: Math.round((entries / wallMs) * 1000),
      failed: job.results.filter((entry) => entry.error).length,
    };
  });
}

if (require.main === module) {
  runBulkBenchmark()
    .then((result) => {
      console.log(
        `bulk: ${result.entries} distinct numbers, upstream latency ${result.latencyMs} ms, BULK_CONCURRENCY=${result.concurrency}: ` +
          `${(result.wallMs / 1000).toFixed(2)} s wall, ${result.entriesPerSecond} entries/s, ${result.failed} failed lookups`,
      );
      process.exit(result.failed > 0 ? 1 : 0);
    })
    .catch((error: unknown) => {
      console.error('bulk benchmark failed:', error);
      process.exit(1);
    });
}
