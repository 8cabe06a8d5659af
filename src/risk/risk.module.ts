import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { ProviderModule } from '../provider/provider.module';
import { SettingsModule } from '../settings/settings.module';
import { RiskController } from './risk.controller';
import { RiskService } from './risk.service';
import { RiskStoreModule } from './risk-store.module';
import { RiskVerdictModule } from './risk-verdict.module';

/**
 * POST /api/v1/risk and its feedback (docs/sms-pumping.md). An orchestrator, like filter/: it asks
 * settings, credits, provider/'s face and idempotency; nothing imports it.
 */
@Module({
  imports: [SettingsModule, CreditsModule, ProviderModule, IdempotencyModule, RiskStoreModule, RiskVerdictModule],
  controllers: [RiskController],
  providers: [RiskService],
})
export class RiskModule {}
