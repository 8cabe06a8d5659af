import { Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { AuthenticationAttempts } from '../auth/api-key.guard';
import { Clock } from '../common/clock';
import { RedisBudget } from '../common/redis-budget';
import { shutdownStep } from '../common/shutdown-steps';
import { AppConfig } from '../config/app-config';
import { FailedAuthLimiter } from './failed-auth.limiter';
import { MemoryRateLimitStorage } from './memory-rate-limit.storage';
import { PlanRateLimitGuard } from './plan-rate-limit.guard';
import { RateLimitStorage } from './rate-limit-storage';
import { createRedisClient, firstConnection, RedisRateLimitStorage } from './redis-rate-limit.storage';

/** Redis when REDIS_URL is set (one count for every instance), otherwise this process's memory. */
export async function createRateLimitStorage(config: AppConfig, clock: Clock, budget?: RedisBudget): Promise<RateLimitStorage> {
  if (!config.redisUrl) return new MemoryRateLimitStorage(clock);
  const redis = createRedisClient(config.redisUrl, config.rateLimitRedisPrefix);
  await firstConnection(redis);
  return new RedisRateLimitStorage(redis, budget);
}

@Module({
  providers: [
    {
      provide: RateLimitStorage,
      inject: [AppConfig, Clock, { token: RedisBudget, optional: true }],
      useFactory: (config: AppConfig, clock: Clock, budget?: RedisBudget) => createRateLimitStorage(config, clock, budget),
    },
  ],
  exports: [RateLimitStorage],
})
export class RateLimitStorageModule implements OnApplicationShutdown {
  constructor(@Inject(RateLimitStorage) private readonly storage: RateLimitStorage) {}

  async onApplicationShutdown(): Promise<void> {
    await shutdownStep('closing Redis (rate limits)', () => this.storage.close());
  }
}

/**
 * Plan limits per account and the failed-authentication limit per address. AppModule registers
 * PlanRateLimitGuard as a global guard after ApiKeyGuard, which finds AuthenticationAttempts here.
 */
@Module({
  imports: [RateLimitStorageModule],
  providers: [PlanRateLimitGuard, FailedAuthLimiter, { provide: AuthenticationAttempts, useExisting: FailedAuthLimiter }],
  exports: [PlanRateLimitGuard, AuthenticationAttempts],
})
export class RateLimitModule {}
