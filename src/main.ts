import { INestApplication, Logger } from '@nestjs/common';
import { AdminService } from './admin/admin.service';
import { CreditsService } from './credits/credits.service';
import { createApp } from './shell/app-factory';
import { HttpDrain } from './common/http-drain';
import { AppConfig, resolveLogFormat } from './config/app-config';
import { ConfigurationError } from './config/environment';
import { loadEnvironment } from './config/load-config';
import { migrate, openDatabase } from './database/database-runtime';
import { EmbeddedPostgresError } from './database/embedded-postgres';
import { BootLogger } from './logging/boot-logger';
import { installShutdown } from './shell/shutdown';
import { explainStartupFailure, reportStartupFailure, StartupContext } from './shell/startup-failure';
import { DEMO_CREDITS, demoAccountOf, rememberDemoAccount, startBanner, startBannerLine } from './shell/start-banner';

/** What start-up knew when it failed, for the one line that explains it (shell/startup-failure.ts). */
const startup: StartupContext = {};

async function bootstrap(): Promise<void> {
  const env = loadEnvironment();
  Object.assign(startup, {
    databaseUrl: env.DATABASE_URL,
    embeddedDir: env.EMBEDDED_PG_DIR,
    port: env.PORT,
    host: env.HOST,
    debug: env.LOG_LEVEL === 'debug',
    format: resolveLogFormat(env),
  } satisfies StartupContext);
  const bootLogger = new BootLogger(env.LOG_LEVEL, resolveLogFormat(env));
  Logger.overrideLogger(bootLogger);
  const logger = new Logger('Bootstrap');
  const database = await openDatabase(env.DATABASE_URL, env.EMBEDDED_PG_DIR, () => {
    // Its own supervisor (systemd, a container runtime) starts the whole service again.
    logger.error('Exiting: the embedded PostgreSQL is gone and could not be started again');
    process.exit(1);
  });
  // From here on, no way out of the process may leave the embedded server (its own session) running:
  // the signal handlers come before anything else can take time, and 'exit' is the last resort.
  process.on('exit', () => database.stopWithoutWaiting());
  const config = new AppConfig(env, database.url);
  let app: INestApplication | undefined;
  let http: HttpDrain | undefined;
  let starting: Promise<void> = Promise.resolve();
  installShutdown({
    timeoutMs: config.shutdownTimeoutMs,
    requestsInFlight: () => http?.requestsInFlight ?? 0,
    drain: async (budgetMs) => (http ? http.drain(budgetMs) : 0),
    refundCutOff: async () => app?.get(CreditsService).refundCallsCutOff(),
    started: () => starting.catch(() => undefined),
    closeApp: async () => {
      Logger.overrideLogger(bootLogger); // app.close() ends the app's logger module before its last messages
      await app?.close();
    },
    stopDatabase: (timeoutMs) => database.stop(timeoutMs),
    exit: (code) => process.exit(code),
  });
  if (database.embedded) logger.log(`No DATABASE_URL: using the embedded PostgreSQL in ${database.dataDir}`);
  for (const note of database.notes) logger.log(`Embedded PostgreSQL: ${note}`);

  starting = (async () => {
    const applied = await migrate(database.url);
    if (applied.length > 0) logger.log(`Applied migrations: ${applied.join(', ')}`);
    const started = await createApp(config);
    app = started;
    http = new HttpDrain(started.getHttpServer());
    await started.listen(config.port, config.host); // a port taken: one line (startup-failure.ts)
    const demoKey = database.embedded ? await createDemoAccount(started.get(AdminService), database.dataDir!) : undefined;
    const base = `http://localhost:${(started.getHttpServer().address() as { port: number }).port}`;
    const demoAccountId = database.dataDir ? demoAccountOf(database.dataDir) : undefined;
    const banner = { baseUrl: base, adminApi: config.adminToken !== undefined, demoKey, demoAccountId, embedded: database.embedded };
    if (config.logFormat === 'pretty') {
      logger.log(`Phone Filter listening on ${base}`);
      process.stdout.write(startBanner(banner));
    } else {
      process.stdout.write(startBannerLine(banner)); // one JSON line among the others
    }
  })();
  try {
    await starting;
  } catch (error) {
    // A start-up that fails stops the embedded server before the process exits.
    await app?.close().catch(() => undefined);
    await database.stop(START_FAILURE_STOP_MS).catch(() => undefined);
    throw error;
  }
}

/** How long the embedded server gets to stop when the start-up failed. */
const START_FAILURE_STOP_MS = 5000;

/**
 * First start on the embedded database: a ready-to-use account. Its key goes into the start-up
 * block (plain stdout, never a log line: keys never reach the logs); its id is remembered so later
 * starts can say how to issue a new key.
 */
async function createDemoAccount(admin: AdminService, dataDir: string): Promise<string | undefined> {
  if ((await admin.countAccounts()) > 0) return undefined;
  const demo = await admin.createAccount({ name: 'Demo account', plan: 'standard', credits: DEMO_CREDITS }, 'bootstrap');
  rememberDemoAccount(dataDir, demo.id);
  return demo.api_key;
}

bootstrap().catch((error: unknown) => {
  const explained = error instanceof ConfigurationError || error instanceof EmbeddedPostgresError;
  reportStartupFailure(explained ? error.message : explainStartupFailure(error, startup), error, startup);
  process.exit(1);
});
