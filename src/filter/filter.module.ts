import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module';
import { IdempotencyModule } from '../idempotency/idempotency.module';
import { ProviderModule } from '../provider/provider.module';
import { SettingsModule } from '../settings/settings.module';
import { FilterController } from './filter.controller';
import { FilterService } from './filter.service';

@Module({
  imports: [SettingsModule, CreditsModule, ProviderModule, IdempotencyModule],
  controllers: [FilterController],
  providers: [FilterService],
})
export class FilterModule {}
