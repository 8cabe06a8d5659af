import { Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { AllowanceSpentBeforeSending, HeldAllowance, RedisBudget } from '../common/redis-budget';
import { WindowCount } from './rate-limit-policy';
import { RateLimitStorage, StorageRecord } from './rate-limit-storage';

/**
 * One fixed window per key, counted atomically in Redis: the window opens with the first hit and
 * lasts `ttl` ms; a hit when no window is open (no key, or the key's last millisecond) opens a new
 * one. A key without expiry (never written by this script) is treated as no window, so a count
 * can never outlive its window. Past `limit`, a block of `blockDuration` ms, like the memory storage.
 * ARGV[4] hits are counted at once (the calls of one key coalesced by RedisRateLimitStorage; 1 when
 * absent), exactly as that many hits one after the other: the same total, and a block set by the
 * first of them past the limit; the script says whether a block was already set before them.
 * (The script of @nest-lab/throttler-storage-redis re-armed the expiry of a key read at 0 ms left
 * without resetting its count: a client hammering at the window's edge carried the count over, window
 * after window, and was starved.)
 * Exported for the benchmark's round-trip floor (tools/bench/bare-app.ts).
 */
export const FIXED_WINDOW_SCRIPT = `
local ttl = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local blockDuration = tonumber(ARGV[3])
local count = tonumber(ARGV[4] or '1')
local hits
local timeToExpire = redis.call('PTTL', KEYS[1])
if timeToExpire <= 0 then
  redis.call('SET', KEYS[1], count, 'PX', ttl)
  hits = count
  timeToExpire = ttl
else
  hits = redis.call('INCRBY', KEYS[1], count)
end
local blockedBefore = 1
local timeToBlockExpire = redis.call('PTTL', KEYS[2])
if timeToBlockExpire <= 0 then
  blockedBefore = 0
  timeToBlockExpire = 0
  if hits > limit and blockDuration > 0 then
    redis.call('SET', KEYS[2], 1, 'PX', blockDuration)
    timeToBlockExpire = blockDuration
  end
end
return { hits, timeToExpire, timeToBlockExpire, blockedBefore }
`;

/** The script as a command of a pipeline. */
interface CountingPipeline {
  exec(): Promise<Array<[Error | null, unknown]> | null>;
  countHits(hitKey: string, blockKey: string, ttlMs: number, limit: number, blockDurationMs: number, count: number): CountingPipeline;
}

/** The calls waiting for one script call: the same key, window, limit and block. */
interface PendingHits {
  hitKey: string;
  blockKey: string;
  ttlMs: number;
  limit: number;
  blockDurationMs: number;
  calls: Array<{ resolve: (record: StorageRecord) => void; reject: (error: unknown) => void; allowance: HeldAllowance }>;
}

/**
 * Counts in Redis, so every instance shares one window per account and per address.
 *
 * The hits of one key that arrive in the same turn of the event loop (the concurrent calls of an
 * account) are counted by ONE script call, which adds them all and tells each call its own place in
 * the window: hit k of n gets the count before them plus k, as if they had been counted one by one,
 * so the limit stays exact (nothing is counted in this process, nothing is approximated). There is no
 * timer: the hits of a turn leave at its end (setImmediate), and what is coalesced grows only with the
 * load. A failure (Redis down, the command timeout) fails every call of the group.
 */
export class RedisRateLimitStorage extends RateLimitStorage {
  private pending = new Map<string, PendingHits>();

  constructor(
    readonly redis: Redis,
    private readonly budget?: RedisBudget,
  ) {
    super();
    budget?.watch(redis);
    // EVALSHA, falling back to EVAL once per connection; the client's key prefix applies to KEYS.
    redis.defineCommand('countHits', { numberOfKeys: 2, lua: FIXED_WINDOW_SCRIPT });
  }

  /**
   * Within the request's Redis allowance (RedisBudget): a count it cuts short or that it finds spent
   * fails, and the plan limit is not applied to that call (as when Redis is down).
   */
  increment(key: string, ttlMs: number, limit: number, blockDurationMs: number, throttlerName: string): Promise<StorageRecord> {
    if (!this.budget) return this.countHit(key, ttlMs, limit, blockDurationMs, throttlerName);
    return this.budget.spend(
      () => this.countHit(key, ttlMs, limit, blockDurationMs, throttlerName),
      () => {
        throw new Error("the request's Redis allowance is spent (REDIS_CALL_BUDGET_MS)");
      },
    );
  }

  private countHit(key: string, ttlMs: number, limit: number, blockDurationMs: number, throttlerName: string): Promise<StorageRecord> {
    const { hitKey, blockKey } = keysOf(key, throttlerName);
    const id = `${hitKey}|${ttlMs}|${limit}|${blockDurationMs}`;
    return new Promise((resolve, reject) => {
      let group = this.pending.get(id);
      if (!group) {
        if (this.pending.size === 0) setImmediate(() => this.flush());
        group = { hitKey, blockKey, ttlMs, limit, blockDurationMs, calls: [] };
        this.pending.set(id, group);
      }
      group.calls.push({ resolve, reject, allowance: this.budget?.current() });
    });
  }

  /**
   * One script call per key waiting, all in one explicit pipeline: written to Redis now (the client's
   * auto-pipelining would wait one more turn of the loop). Each call still has the command timeout.
   */
  private flush(): void {
    const groups = this.sendable([...this.pending.values()]);
    this.pending = new Map();
    if (groups.length === 0) return;
    const pipeline = this.redis.pipeline() as unknown as CountingPipeline;
    for (const { hitKey, blockKey, ttlMs, limit, blockDurationMs, calls } of groups) pipeline.countHits(hitKey, blockKey, ttlMs, limit, blockDurationMs, calls.length);
    // Sent as a call whose allowance is still open (the turn that scheduled the flush may have spent its own).
    const sent = this.budget ? this.budget.sendingFor(groups[0].calls[0].allowance, () => pipeline.exec()) : pipeline.exec();
    sent.then(
      (replies) =>
        groups.forEach((group, index) => {
          const [error, reply] = replies?.[index] ?? [new Error('Redis gave no reply to the rate-limit pipeline'), undefined];
          try {
            if (error) throw error;
            answer(group, reply);
          } catch (failure) {
            // Settles every call of the group (a call already answered ignores it), whatever the reply was.
            for (const call of group.calls) call.reject(failure);
          }
        }),
      (error: unknown) => groups.forEach((group) => group.calls.forEach((call) => call.reject(error))),
    );
  }

  /**
   * The groups without the calls whose Redis allowance ran out while they waited for the end of the
   * turn (a busy event loop runs it late): those are not counted, and go on without the plan limit, as
   * if Redis had not answered them in time. A group left with no call is not sent.
   */
  private sendable(groups: PendingHits[]): PendingHits[] {
    const budget = this.budget;
    if (!budget) return groups;
    return groups
      .map((group) => ({
        ...group,
        calls: group.calls.filter((call) => {
          if (budget.admits(call.allowance)) return true;
          call.reject(new AllowanceSpentBeforeSending());
          return false;
        }),
      }))
      .filter((group) => group.calls.length > 0);
  }

  async peek(key: string, throttlerName: string): Promise<WindowCount | undefined> {
    const { hitKey } = keysOf(key, throttlerName);
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

/** Each call of a group gets its own place in the window, as if the hits had been counted one by one. */
function answer({ limit, calls }: PendingHits, reply: unknown): void {
  if (!Array.isArray(reply) || reply.length !== 4 || !reply.every((value) => Number.isInteger(value))) {
    throw new Error(`unexpected reply of the rate-limit script: ${JSON.stringify(reply)}`);
  }
  const [hits, timeToExpireMs, timeToBlockExpireMs, blockedBefore] = reply as [number, number, number, number];
  const first = hits - calls.length;
  calls.forEach((call, index) => {
    const totalHits = first + index + 1;
    // Blocked when a block was set before these hits, or by this hit or an earlier one of them.
    const isBlocked = blockedBefore === 1 || (timeToBlockExpireMs > 0 && totalHits > limit);
    call.resolve({
      totalHits,
      timeToExpire: Math.ceil(timeToExpireMs / 1000),
      isBlocked,
      timeToBlockExpire: isBlocked ? Math.ceil(timeToBlockExpireMs / 1000) : 0,
    });
  });
}

/** One hash slot per key and throttler (`{…}`), so the script's two keys live together in a cluster too. */
function keysOf(key: string, throttlerName: string): { hitKey: string; blockKey: string } {
  return { hitKey: `{${key}:${throttlerName}}:hits`, blockKey: `{${key}:${throttlerName}}:blocked` };
}

/**
 * How long a rate-limit command may wait for Redis. A Redis that is up but does not answer (frozen,
 * overloaded, a network that drops packets) would otherwise hold every API call: past this, the plan
 * limit is not applied to the call and failed authentications are counted in this process.
 */
export const REDIS_COMMAND_TIMEOUT_MS = 300;

/**
 * A client that fails at once while Redis is down instead of queueing, and after
 * REDIS_COMMAND_TIMEOUT_MS while it does not answer (the guards then let requests through rather than
 * stall them), and says so once per outage, not once per request.
 */
export function createRedisClient(url: string, keyPrefix: string): Redis {
  const logger = new Logger('RateLimitRedis');
  // Auto-pipelining: the commands of concurrent requests issued in the same tick leave in one write.
  const redis = new Redis(url, {
    keyPrefix,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    // A count that got no answer was already given up on (the call went through unlimited): sent again
    // after a reconnect, it would count that call a second time. The commands in flight at a disconnect
    // are then dropped, and commandTimeout is what fails them. A failed-authentication give-back lost
    // that way leaves its address one attempt nearer its limit for the rest of the window.
    autoResendUnfulfilledCommands: false,
    enableAutoPipelining: true,
  });
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
