import { Global, Module } from '@nestjs/common';
import { Metrics } from './metrics';
import { MetricsController } from './metrics.controller';

/**
 * GET /metrics. A leaf, global like configuration: features push to `Metrics` (injected as
 * @Optional(), so a feature module still works without it) and register their own scrape-time
 * instruments on its registry (provider/metrics/provider-metrics.ts, bulk/bulk-metrics.ts).
 */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [Metrics],
  exports: [Metrics],
})
export class MetricsModule {}
