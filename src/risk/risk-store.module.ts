import { Module } from '@nestjs/common';
import { Clock } from '../common/clock';
import { RedisBudget } from '../common/redis-budget';
import { AppConfig } from '../config/app-config';
import { CounterStore } from './counters/counter-store';
import { MemoryCounterStore } from './counters/memory-counter-store';
import { RedisCounterStore } from './counters/redis-counter-store';
import { RiskCounters } from './counters/risk-counters';
import { RiskFeedbackRepository } from './risk-feedback.repository';
import { RiskRecords } from './risk-records';

/** Redis when REDIS_URL is set (every instance counts together), otherwise this process's memory. */
export function createCounterStore(config: AppConfig, clock: Clock, budget?: RedisBudget): CounterStore {
  return config.redisUrl ? new RedisCounterStore(config.redisUrl, config.risk.redisPrefix, budget) : new MemoryCounterStore(clock);
}

/**
 * The risk verdict's records (counters and feedback rows), apart from RiskModule so that retention
 * and erasure (also run from the admin CLI) use them without the HTTP routes.
 */
@Module({
  providers: [
    {
      provide: CounterStore,
      inject: [AppConfig, Clock, { token: RedisBudget, optional: true }],
      useFactory: (config: AppConfig, clock: Clock, budget?: RedisBudget) => createCounterStore(config, clock, budget),
    },
    { provide: RiskCounters, inject: [CounterStore, AppConfig], useFactory: (store: CounterStore, config: AppConfig) => new RiskCounters(store, config.dataHashKey) },
    RiskFeedbackRepository,
    RiskRecords,
  ],
  exports: [RiskCounters, RiskRecords],
})
export class RiskStoreModule {}
