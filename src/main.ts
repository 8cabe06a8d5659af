import { Logger } from '@nestjs/common';
import { AdminService } from './admin/admin.service';
import { createApp } from './app-factory';
import { HttpDrain } from './common/http-drain';
import { installShutdown } from './shutdown';
import { AppConfig } from './config/app-config';
import { ConfigurationError } from './config/environment';
import { loadEnvironment } from './config/load-config';
import { migrate, openDatabase } from './database/database-runtime';
import { EmbeddedPostgresError } from './database/embedded-postgres';
import { BootLogger } from './logging/boot-logger';

const DEMO_CREDITS = 10_000;

async function bootstrap(): Promise<void> {
  const env = loadEnvironment();
  const bootLogger = new BootLogger(env.LOG_LEVEL);
  Logger.overrideLogger(bootLogger);
  const logger = new Logger('Bootstrap');
  const database = await openDatabase(env.DATABASE_URL, env.EMBEDDED_PG_DIR, () => {
    // Its own supervisor (systemd, a container runtime) starts the whole service again.
    logger.error('Exiting: the embedded PostgreSQL is gone and could not be started again');
    process.exit(1);
  });
  if (database.embedded) logger.log(`No DATABASE_URL: using the embedded PostgreSQL in ${env.EMBEDDED_PG_DIR}`);
  const applied = await migrate(database.url);
  if (applied.length > 0) logger.log(`Applied migrations: ${applied.join(', ')}`);

  const config = new AppConfig(env, database.url);
  const app = await createApp(config);
  const http = new HttpDrain(app.getHttpServer());
  let starting: Promise<void> = Promise.resolve();
  installShutdown({
    timeoutMs: config.shutdownTimeoutMs,
    requestsInFlight: () => http.requestsInFlight,
    drain: (budgetMs) => http.drain(budgetMs),
    started: () => starting.catch(() => undefined),
    closeApp: async () => {
      Logger.overrideLogger(bootLogger); // app.close() ends the app's logger module before its last messages
      await app.close();
    },
    stopDatabase: (timeoutMs) => database.stop(timeoutMs),
    exit: (code) => process.exit(code),
  });

  starting = (async () => {
    if (database.embedded) await createDemoAccount(app.get(AdminService), logger, config.port);
    await app.listen(config.port, config.host);
    const base = `http://localhost:${(app.getHttpServer().address() as { port: number }).port}`;
    logger.log(`Phone Filter listening on ${base} (Swagger UI: ${base}/docs, metrics: ${base}/metrics)`);
  })();
  await starting;
}

/**
 * First start on the embedded database: a ready-to-use account. Its key is printed once, on stdout as
 * plain text for the person at the terminal, never as a log line (keys never reach the logs).
 */
async function createDemoAccount(admin: AdminService, logger: Logger, port: number): Promise<void> {
  if ((await admin.countAccounts()) > 0) return;
  const demo = await admin.createAccount({ name: 'Demo account', plan: 'standard', credits: DEMO_CREDITS }, 'bootstrap');
  logger.log(`Created a demo account with ${DEMO_CREDITS} credits; its API key is printed below, once`);
  process.stdout.write(
    `\nDemo API key (shown once, keep it):\n\n    ${demo.api_key}\n\n` +
      `  Try: curl -s -X POST localhost:${port}/api/v1/filter -H "Authorization: Bearer ${demo.api_key}" ` +
      `-H "Content-Type: application/json" -d '{"phone":"+14155552671"}'\n\n`,
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
