import { INestApplication } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { AdminService } from '../../src/admin/admin.service';
import { createApp } from '../../src/app-factory';
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

/** The real AppModule over the e2e database, configured like production plus `env` overrides. */
export async function startTestApp(env: Record<string, string | undefined> = {}): Promise<TestApp> {
  const raw: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'error', ...env };
  const config = new AppConfig(validateEnvironment(raw), raw.DATABASE_URL!);
  const app = await createApp(config);
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
