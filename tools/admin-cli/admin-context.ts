import { DynamicModule, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AdminModule } from '../../src/admin/admin.module';
import { AdminService } from '../../src/admin/admin.service';
import { ChecksModule } from '../../src/checks/checks.module';
import { ClockModule } from '../../src/common/clock.module';
import { AppConfig } from '../../src/config/app-config';
import { AppConfigModule } from '../../src/config/config.module';
import { loadEnvironment } from '../../src/config/load-config';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { TransactionsModule } from '../../src/database/transactions';
import { migrate, openDatabase } from '../../src/database/database-runtime';
import { knownStartupMistake } from '../../src/shell/startup-failure';

/**
 * Only what AdminService needs: the CLI must not start the service's background work (workers,
 * schedulers) that the full AppModule may run, nor load its HTTP side (AdminModule has no routes: loading
 * express, Swagger and the upstream adapters cost each command about 0.3 s of CPU). Query logging is off so
 * nothing but the command's own output reaches stdout.
 */
@Module({})
class AdminCliModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AdminCliModule,
      imports: [
        AppConfigModule.forRoot(config),
        ClockModule,
        ChecksModule.forRoot(config.checkTuning),
        TypeOrmModule.forRoot({ ...dataSourceOptions(config.database.url, 2), autoLoadEntities: true, logging: false }),
        TransactionsModule,
        AdminModule,
      ],
    };
  }
}

/**
 * Opens the service's database (DATABASE_URL, or the embedded one in EMBEDDED_PG_DIR, shared with a
 * running service), migrates it, runs `work` with the same AdminService as the HTTP admin API, and
 * closes everything (stopping the embedded server if this process started it) so the process exits.
 */
export async function withAdminService<T>(work: (admin: AdminService) => Promise<T>): Promise<T> {
  const env = loadEnvironment();
  // A wrong DATABASE_URL or a checkout it cannot write: the service's one-line explanation, not the driver's error.
  const explained = (error: unknown) => {
    const known = knownStartupMistake(error, { databaseUrl: env.DATABASE_URL, embeddedDir: env.EMBEDDED_PG_DIR });
    return known ? new Error(known) : error;
  };
  const database = await openDatabase(env.DATABASE_URL, env.EMBEDDED_PG_DIR).catch((error: unknown) => Promise.reject(explained(error)));
  try {
    await migrate(database.url).catch((error: unknown) => Promise.reject(explained(error)));
    const context = await NestFactory.createApplicationContext(AdminCliModule.forRoot(new AppConfig(env, database.url)), {
      logger: false,
      abortOnError: false,
    });
    try {
      return await work(context.get(AdminService));
    } finally {
      await context.close();
    }
  } finally {
    await database.stop();
  }
}
