import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module';
import { AuthModule } from '../auth/auth.module';
import { CreditsModule } from '../credits/credits.module';
import { BulkPrivacyModule } from '../bulk/bulk-privacy.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { ProviderModule } from '../provider/provider.module';
import { WatchlistPrivacyModule } from '../watchlists/watchlist-privacy.module';
import { OutboxPrivacyModule } from '../webhooks/outbox-privacy.module';
import { RiskStoreModule } from '../risk/risk-store.module';
import { RateLimitModule } from '../rate-limit/rate-limit.module';
import { SettingsModule } from '../settings/settings.module';
import { AuditModule } from '../audit/audit.module';
import { AdminTokenGuard } from './admin-token.guard';
import { AdminController } from './admin.controller';
import { AdminService } from './admin.service';
import { ErasureService } from './erasure.service';

@Module({
  // RateLimitModule: the failed-authentication limit that wrong admin tokens count against, like wrong keys.
  imports: [
    AccountsModule,
    AuditModule,
    AuthModule,
    CreditsModule,
    RateLimitModule,
    SettingsModule,
    // The stores an erasure reaches, each through its owner (no timers or workers: the admin CLI runs this too).
    BulkPrivacyModule,
    IdempotencyModule,
    ProviderModule,
    WatchlistPrivacyModule,
    OutboxPrivacyModule,
    RiskStoreModule,
  ],
  controllers: [AdminController],
  providers: [AdminService, AdminTokenGuard, ErasureService],
  exports: [AdminService],
})
export class AdminModule {}
