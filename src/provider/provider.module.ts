import { Module } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { HlrLookupsAdapter } from './adapters/hlr-lookups.adapter';
import { SandboxAdapter } from './adapters/sandbox.adapter';
import { LookupCacheStore, MemoryLookupCacheStore, RedisLookupCacheStore } from './lookup-cache.store';
import { LookupProvider } from './lookup-provider';
import { LookupService } from './lookup.service';
import { TieredLookupCacheStore } from './tiered-lookup-cache.store';
import { ProviderHealth } from './provider-health';
import { ProviderMetrics } from './provider-metrics';

/** The adapter named by PROVIDER, built from the validated configuration. */
export function createLookupProvider(config: AppConfig): LookupProvider {
  const { kind, hlrLookups, timeoutMs, retries, breaker } = config.provider;
  switch (kind) {
    case 'sandbox':
      return new SandboxAdapter(timeoutMs);
    case 'hlr-lookups':
      return new HlrLookupsAdapter({
        ...hlrLookups,
        timeoutMs,
        retries,
        breaker,
        bulkConcurrency: config.bulk.concurrency,
        watchlistConcurrency: config.watchlists.concurrency,
      });
  }
}

/**
 * Redis when REDIS_URL is set (shared by every instance, with an in-process tier in front bounded by
 * the Redis TTLs), otherwise a bounded in-process LRU.
 */
export function createLookupCacheStore(config: AppConfig): LookupCacheStore {
  return config.redisUrl
    ? new TieredLookupCacheStore(new RedisLookupCacheStore(config.redisUrl, config.cache.keyPrefix), config.cache.maxEntries)
    : new MemoryLookupCacheStore(config.cache.maxEntries);
}

/**
 * Lookups of the three checks, cached and collapsed. A leaf module: imports no other feature.
 * Needs AppConfig (global, from AppConfigModule).
 */
@Module({
  providers: [
    { provide: LookupProvider, inject: [AppConfig], useFactory: createLookupProvider },
    { provide: LookupCacheStore, inject: [AppConfig], useFactory: createLookupCacheStore },
    LookupService,
    ProviderHealth,
    ProviderMetrics,
  ],
  exports: [LookupService, LookupProvider, ProviderHealth],
})
export class ProviderModule {}
