import { Module } from '@nestjs/common';
import { Clock } from '../common/clock';
import { RedisBudget } from '../common/redis-budget';
import { AppConfig } from '../config/app-config';
import { LookupCacheStore, MemoryLookupCacheStore, RedisLookupCacheStore } from './cache/lookup-cache.store';
import { TieredLookupCacheStore } from './cache/tiered-lookup-cache.store';
import { LookupCacheEraser } from './lookup-cache-eraser';

/**
 * Redis when REDIS_URL is set (shared by every instance, with an in-process tier in front bounded by
 * the Redis TTLs), otherwise a bounded in-process LRU.
 */
export function createLookupCacheStore(config: AppConfig, clock: Clock, budget?: RedisBudget): LookupCacheStore {
  return config.redisUrl
    ? new TieredLookupCacheStore(new RedisLookupCacheStore(config.redisUrl, config.cache.keyPrefix, { budget, clock }), config.cache.maxEntries)
    : new MemoryLookupCacheStore(config.cache.maxEntries, clock);
}

/**
 * The lookup cache and its erasure, without the upstreams: ProviderModule builds on it, and the admin
 * operations (the CLI too) import it alone. Needs AppConfig and CheckRegistry (global).
 */
@Module({
  providers: [
    {
      provide: LookupCacheStore,
      inject: [AppConfig, Clock, { token: RedisBudget, optional: true }],
      useFactory: (config: AppConfig, clock: Clock, budget?: RedisBudget) => createLookupCacheStore(config, clock, budget),
    },
    LookupCacheEraser,
  ],
  exports: [LookupCacheStore, LookupCacheEraser],
})
export class LookupCacheModule {}
