import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { BulkPrivacyModule } from '../bulk/bulk-privacy.module';
import { CreditsModule } from '../credits/credits.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { WatchlistPrivacyModule } from '../watchlists/watchlist-privacy.module';
import { RiskStoreModule } from '../risk/risk-store.module';
import { NumberErasuresModule } from '../erasures/number-erasures.module';
import { RetentionScheduler } from './retention.scheduler';
import { RetentionService } from './retention.service';

/** The retention periods of docs/privacy.md, run on a timer by every instance (not by the admin CLI). */
@Module({
  imports: [AuditModule, CreditsModule, IdempotencyModule, BulkPrivacyModule, WatchlistPrivacyModule, RiskStoreModule, NumberErasuresModule],
  providers: [RetentionService, RetentionScheduler],
  exports: [RetentionService],
})
export class RetentionModule {}
