import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module';
import { ProviderModule } from '../provider/provider.module';
import { SettingsModule } from '../settings/settings.module';
import { FilterController } from './filter.controller';
import { FilterService } from './filter.service';
import { IdempotencyRepository } from './idempotency.repository';
import { IdempotencyService } from './idempotency.service';

@Module({
  imports: [SettingsModule, CreditsModule, ProviderModule],
  controllers: [FilterController],
  providers: [FilterService, IdempotencyRepository, IdempotencyService],
})
export class FilterModule {}
