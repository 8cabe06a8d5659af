import { Module } from '@nestjs/common';
import { ProviderModule } from '../provider/provider.module';
import { SettingsModule } from '../settings/settings.module';
import { RiskStoreModule } from './risk-store.module';
import { RiskVerdicts } from './risk-verdicts';

/**
 * The risk verdict without its route or billing: RiskModule's route and bulk jobs checked with
 * `risk: true` (bulk/) both ask it, so that a verdict is scored one way (docs/sms-pumping.md).
 */
@Module({
  imports: [SettingsModule, ProviderModule, RiskStoreModule],
  providers: [RiskVerdicts],
  exports: [RiskVerdicts],
})
export class RiskVerdictModule {}
