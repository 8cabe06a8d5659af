import { INestApplication } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AdminService } from '../../src/admin/admin.service';
import { createApp } from '../../src/shell/app-factory';
import type { AppExtensions } from '../../src/app.module';
import { AppConfig } from '../../src/config/app-config';
import { validateEnvironment } from '../../src/config/environment';

export interface TestApp {
  app: INestApplication;
  /** The Node HTTP server, for supertest. */
  http: ReturnType<INestApplication['getHttpServer']>;
  config: AppConfig;
  db: DataSource;
  admin: AdminService;
  close(): Promise<void>;
}

/**
 * The real AppModule over the e2e database, configured like production plus `env` overrides, and
 * `extensions` (checks registered beside the built-in ones) when given.
 */
export async function startTestApp(env: Record<string, string | undefined> = {}, extensions: AppExtensions = {}): Promise<TestApp> {
  // Each app counts and caches under its own Redis prefixes, so suites running side by side never
  // share rate-limit windows or cached answers; a test that wants sharing passes the same prefix.
  const isolation = `pf:test:${randomBytes(6).toString('hex')}:`;
  const raw: Record<string, string | undefined> = {
    ...process.env,
    LOG_LEVEL: 'error',
    RATE_LIMIT_REDIS_PREFIX: `${isolation}rl:`,
    CACHE_KEY_PREFIX: `${isolation}lookup:`,
    RISK_REDIS_PREFIX: `${isolation}risk:`,
    // A connection a loaded machine is slow to hand out is not a database gone silent: past 5 s the
    // pool's wait marked the database unreachable and the next requests got 503 (openapi e2e at load 16).
    DATABASE_CONNECT_TIMEOUT_MS: '30000',
    // No readiness probe behind a test's back (it is a request to each upstream, which tests count): a
    // test that wants one runs its step (ReadinessProbe.probe, test/readiness.e2e-spec.ts).
    READINESS_PROBE_INTERVAL_MS: '3600000',
    ...env,
  };
  const config = new AppConfig(validateEnvironment(raw), raw.DATABASE_URL!);
  const app = await createApp(config, undefined, extensions);
  await app.init();
  return {
    app,
    http: app.getHttpServer(),
    config,
    db: app.get(DataSource),
    admin: app.get(AdminService),
    close: () => app.close(),
  };
}
