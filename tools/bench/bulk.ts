import { randomBytes } from 'node:crypto';
import { AdminService } from '../../src/admin/admin.service';
import { createApp } from '../../src/app-factory';
import { AppConfig } from '../../src/config/app-config';
import { validateEnvironment } from '../../src/config/environment';
import { migrate, openDatabase } from '../../src/database/database-runtime';
import { startUpstreamSimulator } from '../upstream-simulator/simulator';

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
  const { entries = 1000, latencyMs = 200, env: extra = {} } = options;
  const simulator = await startUpstreamSimulator({ latencyMs });
  const env = validateEnvironment({
    ...process.env,
    LOG_LEVEL: 'warn',
    PROVIDER: 'hlr-lookups',
    HLR_LOOKUPS_URL: simulator.url,
    HLR_LOOKUPS_KEY: 'sim-key',
    HLR_LOOKUPS_SECRET: 'sim-secret',
    REDIS_URL: '',
    // A queue of its own: no other instance on this database takes the benchmark's work, nor it theirs.
    BULK_QUEUE_NAME: `bulk-bench-${randomBytes(4).toString('hex')}`,
    CACHE_KEY_PREFIX: `bench:${randomBytes(4).toString('hex')}:`,
    ...extra,
  });
  const database = await openDatabase(env.DATABASE_URL, env.EMBEDDED_PG_DIR);
  await migrate(database.url);
  const config = new AppConfig(env, database.url);
  const app = await createApp(config);
  try {
    await app.listen(0, '127.0.0.1');
    const base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    const account = await app.get(AdminService).createAccount({ name: 'bulk benchmark', plan: 'enterprise', credits: entries * 10 }, 'bench');
    const headers = { Authorization: `Bearer ${account.api_key}`, 'Content-Type': 'application/json' };
    const phones = Array.from({ length: entries }, (_, i) => `+4474${String(60 + Math.floor(i / 100_000)).padStart(2, '0')}${String(i % 100_000).padStart(5, '0')}7`);

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
  } finally {
    await app.close();
    await simulator.close();
    await database.stop();
  }
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
