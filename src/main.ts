import { Logger } from '@nestjs/common';
import { AdminService } from './admin/admin.service';
import { createApp } from './app-factory';
import { HttpDrain } from './common/http-drain';
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
  const database = await openDatabase(env.DATABASE_URL, env.EMBEDDED_PG_DIR);
  if (database.embedded) logger.log(`No DATABASE_URL: using the embedded PostgreSQL in ${database.dataDir}`);
  for (const note of database.notes) logger.log(`Embedded PostgreSQL: ${note}`);
  const applied = await migrate(database.url);
  if (applied.length > 0) logger.log(`Applied migrations: ${applied.join(', ')}`);

  const config = new AppConfig(env, database.url);
  const app = await createApp(config);
  const http = new HttpDrain(app.getHttpServer());
  let stopping = false;
  let starting: Promise<void> = Promise.resolve();

  /**
   * SIGTERM / SIGINT: stop accepting connections and let the running requests answer (each one's
   * charge is settled or refunded by its own handler), up to SHUTDOWN_TIMEOUT_MS; then app.close()
   * stops the workers (charge sweeper, bulk queue) and closes Redis and the database pool; then the
   * embedded PostgreSQL stops. A request cut by the bound leaves an unsettled charge, which the
   * sweep refunds at the next start.
   */
  const shutdown = async (signal: string) => {
    if (stopping) return logger.log(`${signal}: already shutting down`);
    stopping = true;
    try {
      await starting.catch(() => undefined); // never cut the start-up (demo account, listen) in half
      logger.log(`${signal}: shutting down; ${http.requestsInFlight} request(s) in flight get up to ${config.shutdownTimeoutMs} ms`);
      const abandoned = await http.drain(config.shutdownTimeoutMs);
      if (abandoned > 0) logger.warn(`${abandoned} request(s) still running after ${config.shutdownTimeoutMs} ms were cut off`);
      Logger.overrideLogger(bootLogger); // app.close() ends the app's logger module before its last messages
      await app.close();
      await database.stop();
      logger.log('Stopped');
      process.exit(0);
    } catch (error) {
      logger.error(`Shutdown failed: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

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
