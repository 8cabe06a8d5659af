import { randomBytes } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { AdminService } from '../../src/admin/admin.service';
import { createApp } from '../../src/shell/app-factory';
import { AppConfig } from '../../src/config/app-config';
import { validateEnvironment } from '../../src/config/environment';
import { migrate, openDatabase } from '../../src/database/database-runtime';
import { startUpstreamSimulator } from '../upstream-simulator/simulator';

export interface BenchService {
  app: INestApplication;
  config: AppConfig;
  base: string;
  /** Authorization and Content-Type of a fresh enterprise account with `credits`. */
  headers: Record<string, string>;
}

/**
 * The service in this process with the hlr-lookups adapter against the upstream simulator at
 * `latencyMs`, an in-memory cache and its own bulk queue and watchlist group (no other instance on
 * the database takes its work), and an account; `work` runs against it, then everything stops.
 */
export async function withBenchService<T>(
  options: { latencyMs: number; credits: number; env: Record<string, string> },
  work: (service: BenchService) => Promise<T>,
): Promise<T> {
  const simulator = await startUpstreamSimulator({ latencyMs: options.latencyMs });
  const tag = randomBytes(4).toString('hex');
  const env = validateEnvironment({
    ...process.env,
    LOG_LEVEL: 'warn',
    PROVIDER: 'hlr-lookups',
    HLR_LOOKUPS_URL: simulator.url,
    HLR_LOOKUPS_KEY: 'sim-key',
    HLR_LOOKUPS_SECRET: 'sim-secret',
    REDIS_URL: '',
    BULK_QUEUE_NAME: `bulk-bench-${tag}`,
    WATCHLIST_SCHEDULE_GROUP: `bench-${tag}`,
    CACHE_KEY_PREFIX: `bench:${tag}:`,
    ...options.env,
  });
  const database = await openDatabase(env.DATABASE_URL, env.EMBEDDED_PG_DIR);
  await migrate(database.url);
  const config = new AppConfig(env, database.url);
  const app = await createApp(config);
  try {
    await app.listen(0, '127.0.0.1');
    const base = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    const account = await app.get(AdminService).createAccount({ name: 'benchmark', plan: 'enterprise', credits: options.credits }, 'bench');
    return await work({ app, config, base, headers: { Authorization: `Bearer ${account.api_key}`, 'Content-Type': 'application/json' } });
  } finally {
    await app.close();
    await simulator.close();
    await database.stop();
  }
}

/** `count` distinct plan-valid UK mobile numbers outside the test-number table (they end in 5). */
export function benchNumbers(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `+4474${String(60 + Math.floor(i / 100_000)).padStart(2, '0')}${String(i % 100_000).padStart(5, '0')}5`);
}
