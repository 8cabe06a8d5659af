import { Module } from '@nestjs/common';
import { CreditsModule } from '../credits/credits.module';
import { ProviderModule } from '../provider/provider.module';
import { RiskVerdictModule } from '../risk/risk-verdict.module';
import { SettingsModule } from '../settings/settings.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { BulkJobsRepository } from './bulk-jobs.repository';
import { BulkPrivacyModule } from './bulk-privacy.module';
import { BulkMetrics } from './bulk-metrics';
import { BulkQueue } from './bulk-queue';
import { BulkController } from './bulk.controller';
import { BulkProcessor } from './bulk.processor';
import { BulkService } from './bulk.service';
import { ChunkLeases } from './chunk-leases';
import { ChunkLeasesRepository } from './chunk-leases.repository';

@Module({
  imports: [SettingsModule, CreditsModule, ProviderModule, WebhooksModule, BulkPrivacyModule, RiskVerdictModule],
  controllers: [BulkController],
  providers: [BulkJobsRepository, ChunkLeasesRepository, ChunkLeases, BulkQueue, BulkService, BulkProcessor, BulkMetrics],
})
export class BulkModule {}
