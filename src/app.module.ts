import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AccountsModule } from './accounts/accounts.module';
import { AdminHttpModule } from './admin/admin-http.module';
import { ApiKeyGuard } from './auth/api-key.guard';
import { AuthModule } from './auth/auth.module';
import { BulkModule } from './bulk/bulk.module';
import type { CheckRegistration } from './checks/check-definition';
import { ChecksModule } from './checks/checks.module';
import { AllExceptionsFilter } from './common/all-exceptions.filter';
import { Clock } from './common/clock';
import { ClockModule } from './common/clock.module';
import { BodyErrorGuard } from './common/body-error.guard';
import { StrictValidationPipe } from './common/validation';
import { AppConfig } from './config/app-config';
import { AppConfigModule } from './config/config.module';
import { CreditsHttpModule } from './credits/credits-http.module';
import { dataSourceOptions } from './database/data-source-options';
import { DatabaseReachability } from './database/reachability';
import { StatementModeSetup } from './database/statement-mode.setup';
import { FilterModule } from './filter/filter.module';
import { HealthModule } from './health/health.module';
import { TransactionsModule } from './database/transactions';
import { DatabaseLogger } from './logging/database-logger';
import { LoggingModule } from './logging/logging.module';
import { MetricsModule } from './metrics/metrics.module';
import { PlanRateLimitGuard } from './rate-limit/plan-rate-limit.guard';
import { RetentionModule } from './privacy/retention.module';
import { RiskModule } from './risk/risk.module';
import { RateLimitModule } from './rate-limit/rate-limit.module';
import { RedisBudgetModule } from './shell/redis-budget.module';
import { SettingsHttpModule } from './settings/settings-http.module';
import { WatchlistsModule } from './watchlists/watchlists.module';
import { WebhooksModule } from './webhooks/webhooks.module';

/** What a deployment (or a test) adds to the service without changing src/. */
export interface AppExtensions {
  checks?: readonly CheckRegistration[];
  /** The time the app reads (tests: a ManualClock, so that a window or a lease passes when the test says). */
  clock?: Clock;
}

@Module({})
export class AppModule {
  /**
   * The whole service for a validated configuration (main.ts, the admin CLI and the tests build it the
   * same way). `extensions.checks`: checks registered beside the built-in ones, each with its adapter.
   */
  static forRoot(config: AppConfig, extensions: AppExtensions = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(config),
        extensions.clock ? ClockModule.on(extensions.clock) : ClockModule,
        ChecksModule.forRoot(config.checkTuning, extensions.checks),
        LoggingModule.forRoot(config),
        MetricsModule,
        RedisBudgetModule,
        TypeOrmModule.forRoot({
          ...dataSourceOptions(config.database.url, config.database.poolSize, config.database.connectTimeoutMs),
          autoLoadEntities: true,
          logger: new DatabaseLogger(),
        }),
        TransactionsModule,
        AccountsModule,
        AuthModule,
        CreditsHttpModule,
        SettingsHttpModule,
        FilterModule,
        RiskModule,
        BulkModule,
        WatchlistsModule,
        WebhooksModule,
        AdminHttpModule,
        HealthModule,
        RateLimitModule,
        RetentionModule,
      ],
      providers: [
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        { provide: APP_PIPE, useClass: StrictValidationPipe },
        // Guards run in this order: authentication (401), then the plan limit (429), then the body (400), as the contract says.
        { provide: APP_GUARD, useClass: ApiKeyGuard },
        { provide: APP_GUARD, useExisting: PlanRateLimitGuard },
        { provide: APP_GUARD, useClass: BodyErrorGuard },
        StatementModeSetup,
        DatabaseReachability,
      ],
    };
  }
}
