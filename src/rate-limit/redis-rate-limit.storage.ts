import { Logger } from '@nestjs/common';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import Redis from 'ioredis';
import { WindowCount } from './rate-limit-policy';
import { RateLimitStorage, StorageRecord } from './rate-limit-storage';

/**
 * Counts in Redis, so every instance shares one window per account and per address. Counting is
 * @nest-lab/throttler-storage-redis's atomic script; `peek` reads the hit key that script writes.
 */
export class RedisRateLimitStorage extends RateLimitStorage {
  private readonly counter: ThrottlerStorageRedisService;

  constructor(readonly redis: Redis) {
    super();
    this.counter = new ThrottlerStorageRedisService(redis);
  }

  increment(key: string, ttlMs: number, limit: number, blockDurationMs: number, throttlerName: string): Promise<StorageRecord> {
    return this.counter.increment(key, ttlMs, limit, blockDurationMs, throttlerName);
  }

  async peek(key: string, throttlerName: string): Promise<WindowCount | undefined> {
    // The key layout of @nest-lab/throttler-storage-redis 1.2.0 (pinned); the Redis e2e test covers it.
    const hitKey = `{${key}:${throttlerName}}:hits`;
    const replies = await this.redis.multi().get(hitKey).pttl(hitKey).exec();
    const [[countError, count], [ttlError, ttlMs]] = replies as [[Error | null, string | null], [Error | null, number]];
    if (countError ?? ttlError) throw countError ?? ttlError;
    if (count === null || ttlMs <= 0) return undefined;
    return { hits: Number(count), secondsToReset: Math.ceil(ttlMs / 1000) };
  }

  override async close(): Promise<void> {
    // QUIT needs a live connection; a client still reconnecting is simply stopped.
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis.disconnect());
    else this.redis.disconnect();
  }
}

/**
 * A client that fails at once while Redis is down instead of queueing (the guards then let requests
 * through rather than stall them), and says so once per outage, not once per request.
 */
export function createRedisClient(url: string, keyPrefix: string): Redis {
  const logger = new Logger('RateLimitRedis');
  const redis = new Redis(url, { keyPrefix, enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 2000 });
  let healthy = true;
  redis.on('error', (error: Error) => {
    if (!healthy) return;
    healthy = false;
    logger.error(`Redis for rate limits unreachable (${error.message}); requests are not limited until it is back.`);
  });
  redis.on('ready', () => {
    if (!healthy) logger.log('Redis for rate limits is back.');
    healthy = true;
  });
  return redis;
}

/** Gives the first connection a moment before traffic arrives; a Redis that is down does not stop the start. */
export async function firstConnection(redis: Redis, timeoutMs = 2000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve) => {
    const done = () => {
      clearTimeout(timer);
      redis.off('ready', done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    redis.once('ready', done);
  });
}
