import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { CreditsModule } from '../credits/credits.module';
import { BulkPrivacyModule } from '../bulk/bulk-privacy.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { LookupCacheModule } from '../provider/lookup-cache.module';
import { WatchlistPrivacyModule } from '../watchlists/watchlist-privacy.module';
import { OutboxPrivacyModule } from '../webhooks/outbox-privacy.module';
import { RiskStoreModule } from '../risk/risk-store.module';
import { SettingsModule } from '../settings/settings.module';
import { AuditModule } from '../audit/audit.module';
import { NumberErasuresModule } from '../erasures/number-erasures.module';
import { AdminService } from './admin.service';
import { ErasureService } from './erasure.service';

/**
 * The admin operations, without HTTP: what the admin CLI loads (AdminHttpModule adds the routes).
 * Nothing here may bring express, Swagger or a controller into the CLI (admin-cli-graph.spec.ts).
 */
@Module({
  imports: [
    AccountsModule,
    AuditModule,
    AuthModule,
    CreditsModule,
    SettingsModule,
    // The stores an erasure reaches, each through its owner (no timers or workers: the admin CLI runs this too).
    BulkPrivacyModule,
    IdempotencyModule,
    LookupCacheModule,
    WatchlistPrivacyModule,
    OutboxPrivacyModule,
    RiskStoreModule,
    NumberErasuresModule,
  ],
  providers: [AdminService, ErasureService],
  exports: [AdminService],
})
export class AdminModule {}
