import { ThrottlerStorage } from '@nestjs/throttler';
import { WindowCount } from './rate-limit-policy';

/** totalHits, timeToExpire and timeToBlockExpire (seconds, rounded up), isBlocked. */
export type StorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/**
 * What the limits are counted in: @nestjs/throttler's storage contract, plus a look at a window
 * without counting a hit (the failed-authentication limit must refuse before it verifies a key).
 * Two implementations: in memory (one instance) and Redis (shared by every instance).
 */
export abstract class RateLimitStorage implements ThrottlerStorage {
  abstract increment(key: string, ttlMs: number, limit: number, blockDurationMs: number, throttlerName: string): Promise<StorageRecord>;

  /** The current window of `key`, or undefined when none is open. */
  abstract peek(key: string, throttlerName: string): Promise<WindowCount | undefined>;

  /** Releases connections at shutdown. */
  async close(): Promise<void> {}
}
