import { Logger } from '@nestjs/common';
import { AdminService } from './admin/admin.service';
import { createApp } from './app-factory';
import { AppConfig } from './config/app-config';
import { ConfigurationError } from './config/environment';
import { loadEnvironment } from './config/load-config';
import { migrate, openDatabase } from './database/database-runtime';
import { EmbeddedPostgresError } from './database/embedded-postgres';

const DEMO_CREDITS = 10_000;

async function bootstrap(): Promise<void> {
  const logger = new Logger('Bootstrap');
  const env = loadEnvironment();
  const database = await openDatabase(env.DATABASE_URL, env.EMBEDDED_PG_DIR);
  if (database.embedded) logger.log(`No DATABASE_URL: using the embedded PostgreSQL in ${env.EMBEDDED_PG_DIR}`);
  const applied = await migrate(database.url);
  if (applied.length > 0) logger.log(`Applied migrations: ${applied.join(', ')}`);

  const config = new AppConfig(env, database.url);
  const app = await createApp(config);
  let stopping = false;
  let starting: Promise<void> = Promise.resolve();
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal}: shutting down`);
    await starting.catch(() => undefined); // never cut the start-up (demo account, listen) in half
    await app.close();
    await database.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));

  starting = (async () => {
    if (database.embedded) await createDemoAccount(app.get(AdminService), logger, config.port);
    await app.listen(config.port, config.host);
    const base = `http://localhost:${(app.getHttpServer().address() as { port: number }).port}`;
    logger.log(`Phone Filter listening on ${base} (Swagger UI: ${base}/docs)`);
  })();
  await starting;
}

/** First start on the embedded database: a ready-to-use account, its key printed once. */
async function createDemoAccount(admin: AdminService, logger: Logger, port: number): Promise<void> {
  if ((await admin.countAccounts()) > 0) return;
  const demo = await admin.createAccount({ name: 'Demo account', plan: 'standard', credits: DEMO_CREDITS }, 'bootstrap');
  logger.log(
    `Created a demo account with ${DEMO_CREDITS} credits. Its API key (shown once, keep it):\n\n    ${demo.api_key}\n\n` +
      `  Try: curl -s -X POST localhost:${port}/api/v1/filter -H "Authorization: Bearer ${demo.api_key}" ` +
      `-H "Content-Type: application/json" -d '{"phone":"+14155552671"}'\n`,
  );
}

bootstrap().catch((error: unknown) => {
  if (error instanceof ConfigurationError || error instanceof EmbeddedPostgresError) {
    console.error(`\n${error.message}\n`);
  } else {
    console.error('The service could not start:', error);
  }
  process.exit(1);
});
