import { DynamicModule, Type } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { TypeOrmModule } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AdminService } from '../../src/admin/admin.service';
import type { CheckRegistration } from '../../src/checks/check-definition';
import { ChecksModule } from '../../src/checks/checks.module';
import { Clock } from '../../src/common/clock';
import { ClockModule } from '../../src/common/clock.module';
import { Scheduler } from '../../src/common/scheduler';
import { AppConfig } from '../../src/config/app-config';
import { AppConfigModule } from '../../src/config/config.module';
import { validateEnvironment } from '../../src/config/environment';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { TransactionsModule } from '../../src/database/transactions';
import { DatabaseLogger } from '../../src/logging/database-logger';
import { MetricsModule } from '../../src/metrics/metrics.module';
import { ManualClock, ManualScheduler } from '../helpers/manual-clock';
import { createOwnDatabase, OwnDatabase } from '../helpers/own-database';

export interface MediumOptions {
  /** The feature modules under test (with what they import); no HTTP, no AppModule. */
  imports: Array<Type | DynamicModule>;
  /** Environment overrides, validated like the service's own. */
  env?: Record<string, string | undefined>;
  /** Checks registered beside the built-in ones. */
  checks?: readonly CheckRegistration[];
  /** Where the clock starts (default: the machine's time now). */
  clockStart?: number;
  /**
   * Another instance of the service: these modules join its database and its clock (one world, one
   * time) with a scheduler of their own; closing them leaves the database to its owner.
   */
  joining?: Medium;
  /** The URL the services connect through (e.g. a TCP proxy in front of the database), from the database's own. */
  connectVia?: (databaseUrl: string) => Promise<string>;
}

export interface Medium {
  module: TestingModule;
  config: AppConfig;
  db: DataSource;
  /** The one clock of these services: move it with `clock.advance(ms)`. */
  clock: ManualClock;
  /** The background jobs they scheduled: run a round with `jobs.run(name)`. */
  jobs: ManualScheduler;
  get<T>(type: Type<T> | (abstract new (...args: never[]) => T)): T;
  /** The admin operations (accounts, keys, credits), when AdminModule is among the imports: test/factories use it. */
  readonly admin: AdminService;
  /** The database these services run on (another instance joins it with `joining`); not through `connectVia`. */
  readonly databaseUrl: string;
  close(): Promise<void>;
}

/**
 * The medium tier (docs/development.md): services with their real repositories and transactions on the
 * test run's real PostgreSQL, the clock under the test's control, no HTTP, no background loop running on
 * its own (each job is a step the test runs). Each file gets its own Redis prefixes, like the e2e apps.
 */
export async function startMedium(options: MediumOptions): Promise<Medium> {
  const isolation = `pf:test:${randomBytes(6).toString('hex')}:`;
  const database = options.joining ? { url: options.joining.databaseUrl, drop: () => Promise.resolve() } : await databaseOfItsOwn();
  const connectTo = options.connectVia ? await options.connectVia(database.url) : database.url;
  const raw: Record<string, string | undefined> = {
    ...process.env,
    // The run's Redis (the global setup's: REDIS_URL's, or one it started on a machine with none), as in
    // CI, where REDIS_URL is set: a fresh clone's `npm test` has no REDIS_URL, and a test of the Redis
    // stores would otherwise run on memory (counters.medium-spec failed so). REDIS_URL: '' asks for memory.
    REDIS_URL: process.env.REDIS_URL || process.env.TEST_REDIS_URL,
    LOG_LEVEL: 'error',
    PROVIDER: 'sandbox',
    RATE_LIMIT_REDIS_PREFIX: `${isolation}rl:`,
    CACHE_KEY_PREFIX: `${isolation}lookup:`,
    RISK_REDIS_PREFIX: `${isolation}risk:`,
    // A connection a loaded machine is slow to hand out is not a database gone silent (test/helpers/test-app.ts).
    DATABASE_CONNECT_TIMEOUT_MS: '30000',
    ...options.env,
  };
  const config = new AppConfig(validateEnvironment(raw), connectTo);
  const clock = options.joining?.clock ?? new ManualClock(options.clockStart);
  const jobs = new ManualScheduler();
  const module = await Test.createTestingModule({
    imports: [
      AppConfigModule.forRoot(config),
      ClockModule,
      ChecksModule.forRoot(config.checkTuning, options.checks),
      MetricsModule,
      TypeOrmModule.forRoot({ ...dataSourceOptions(config.database.url, config.database.poolSize, config.database.connectTimeoutMs), autoLoadEntities: true, logger: new DatabaseLogger() }),
      TransactionsModule,
      ...options.imports,
    ],
  })
    .overrideProvider(Clock)
    .useValue(clock)
    .overrideProvider(Scheduler)
    .useValue(jobs)
    .compile();
  module.useLogger(false);
  await module.init();
  return {
    module,
    config,
    db: module.get(DataSource),
    clock,
    jobs,
    databaseUrl: database.url,
    get: (type) => module.get(type as Type, { strict: false }),
    get admin() {
      return module.get(AdminService, { strict: false });
    },
    close: async () => {
      await module.close();
      await database.drop();
    },
  };
}

/** A database of the file's own, copied from the run's migrated template (test/global-setup.ts). */
function databaseOfItsOwn(): Promise<OwnDatabase> {
  return createOwnDatabase(process.env.DATABASE_URL!, process.env.TEST_TEMPLATE_DATABASE, 'm');
}
