import { Global, Module } from '@nestjs/common';
import { ProviderModule } from '../provider/provider.module';
import { Metrics } from './metrics';
import { MetricsController } from './metrics.controller';
import { ScrapeCollectors } from './scrape-collectors';

/**
 * GET /metrics. Global, like configuration: features push to `Metrics` (injected as @Optional(), so
 * a feature module still works without it) and stay leaves; this module reads them at scrape time.
 */
@Global()
@Module({
  imports: [ProviderModule],
  controllers: [MetricsController],
  providers: [Metrics, ScrapeCollectors],
  exports: [Metrics],
})
export class MetricsModule {}
