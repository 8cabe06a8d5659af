import { Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import { LRUCache } from 'lru-cache';
import { Clock, SystemClock } from '../../common/clock';
import { RedisBudget } from '../../common/redis-budget';

/**
 * Where LookupService keeps answers between calls. Implementations never throw from get/set: a store
 * that fails answers "miss" and drops writes, so a broken cache degrades to the provider, never to an error.
 */
export abstract class LookupCacheStore {
  abstract readonly kind: 'memory' | 'redis';
  abstract get<T extends object>(key: string): Promise<T | undefined>;
  /** `get` of several keys, in order (a store that can answers them in one round trip). */
  getMany<T extends object>(keys: readonly string[]): Promise<Array<T | undefined>> {
    return Promise.all(keys.map((key) => this.get<T>(key)));
  }
  /**
   * `ttlSeconds` 0 means "do not cache". `unless`: an erasure's mark (`mark`); while it is held the
   * entry is not written, checked in the same step as the write (one Redis script), so an answer whose
   * lookup began before an erasure can never bring the number back after it (docs/privacy.md).
   */
  abstract set(key: string, value: object, ttlSeconds: number, unless?: string): Promise<void>;
  /** Holds an erasure's mark for `ttlSeconds` (see `set`). Throws when the store cannot be reached. */
  abstract mark(key: string, ttlSeconds: number): Promise<void>;
  /**
   * Forgets the entries (an erasure, docs/privacy.md): how many were held. Throws when the store cannot
   * be reached. `broadcast`: other instances' in-process tiers drop them too (only for keys that hold no number).
   */
  abstract delete(keys: string[], broadcast?: boolean): Promise<number>;
  /** For /health/ready: whether the store answers right now. */
  abstract ping(): Promise<boolean>;
  /** Operations that failed and were degraded to a miss or a dropped write. */
  abstract readonly errors: number;
}

const MARKED = Object.freeze({});

/** SET EX of KEYS[1] unless KEYS[2] (an erasure's mark) exists, atomically: 1 when written. */
const SET_UNLESS_MARKED = `if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
return 1`;

/**
 * An lru-cache whose entries expire by the Clock (a test moves it): `perf` is what lru-cache reads
 * the time from, read at every look (no resolution timer).
 */
export function clockedLru(maxEntries: number, clock: Clock): LRUCache<string, object> {
  return new LRUCache<string, object>({ max: maxEntries, perf: { now: () => clock.now() }, ttlResolution: 0 });
}

/** Bounded in-process LRU; the default when REDIS_URL is not set. Entries expire at their TTL by the Clock. */
export class MemoryLookupCacheStore extends LookupCacheStore {
  readonly kind = 'memory';
  readonly errors = 0;
  private readonly entries: LRUCache<string, object>;
  /** Erasures' marks: never evicted for room (an erasure is rare), each gone at its TTL. */
  private readonly marks: LRUCache<string, object>;

  constructor(maxEntries: number, clock: Clock = new SystemClock()) {
    super();
    this.entries = clockedLru(maxEntries, clock);
    this.marks = clockedLru(100_000, clock);
  }

  async get<T extends object>(key: string): Promise<T | undefined> {
    return this.entries.get(key) as T | undefined;
  }

  async set(key: string, value: object, ttlSeconds: number, unless?: string): Promise<void> {
    if (ttlSeconds <= 0 || (unless !== undefined && this.marks.has(unless))) return;
    this.entries.set(key, Object.freeze(value), { ttl: ttlSeconds * 1000 });
  }

  async mark(key: string, ttlSeconds: number): Promise<void> {
    this.marks.set(key, MARKED, { ttl: ttlSeconds * 1000 });
  }

  async delete(keys: string[]): Promise<number> {
    return keys.filter((key) => this.entries.delete(key)).length;
  }

  async ping(): Promise<boolean> {
    return true;
  }

  get size(): number {
    return this.entries.size;
  }
}

/** Shared across instances: JSON values under a key prefix, expiry by SET EX. */
export class RedisLookupCacheStore extends LookupCacheStore implements OnModuleInit, OnModuleDestroy {
  readonly kind = 'redis';
  private failures = 0;
  private lastWarningAt = 0;
  private readonly logger = new Logger('LookupCache');
  readonly client: Redis;
  /** One API request's Redis allowance, shared with the plan limit (RedisBudget): past it, misses and dropped writes. */
  private readonly budget: RedisBudget | undefined;
  /** What the in-process tier's copies are timed by: a round trip is subtracted on it. */
  readonly clock: Clock;

  constructor(
    url: string,
    private readonly keyPrefix: string,
    options: { commandTimeoutMs?: number; budget?: RedisBudget; clock?: Clock } = {},
  ) {
    super();
    this.budget = options.budget;
    this.clock = options.clock ?? new SystemClock();
    this.client = new Redis(url, {
      lazyConnect: true,
      // Fail fast instead of queueing while disconnected: the caller falls back to the provider.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      commandTimeout: options.commandTimeoutMs ?? 500,
      // Short: ioredis leaves this timer armed on refused sockets, delaying shutdown by up to this long.
      connectTimeout: 1000,
      // Each command is written when it is issued, inside its request's Redis allowance (RedisBudget):
      // auto-pipelining wrote it at the end of the turn, which a starved event loop delays past the
      // allowance (the fault suite's sent_after_budget). The in-process tier answers the hot path, so
      // what it saved (one write for the commands of a turn) was small.
      enableAutoPipelining: false,
    });
    this.client.on('error', (error: Error) => this.warn(`Redis error: ${error.message}`));
    this.budget?.watch(this.client);
  }

  /** `operation` within the request's allowance; `instead` once it is spent. */
  private withinBudget<T>(operation: () => Promise<T>, instead: T): Promise<T> {
    return this.budget ? this.budget.spend(operation, () => instead) : operation();
  }

  get errors(): number {
    return this.failures;
  }

  async onModuleInit(): Promise<void> {
    try {
      await this.client.connect();
    } catch (error) {
      this.warn(`Redis cache unreachable at start-up, lookups go to the provider until it is back: ${(error as Error).message}`);
    }
  }

  async onModuleDestroy(): Promise<void> {
    // quit() while (re)connecting neither fails nor stops the reconnect timer; disconnect() does.
    if (this.client.status !== 'ready') return this.client.disconnect();
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }

  async get<T extends object>(key: string): Promise<T | undefined> {
    if (!this.connected('get')) return undefined;
    try {
      const text = await this.withinBudget(() => this.client.get(this.keyPrefix + key), null);
      return text === null ? undefined : (JSON.parse(text) as T);
    } catch (error) {
      this.failed('get', error);
      return undefined;
    }
  }

  /**
   * The entry and how long Redis keeps it still, in one round trip (GET and PTTL pipelined). `ttlMs` is
   * counted from the moment the command was sent (by the Clock), so it never exceeds what Redis had left.
   */
  async getWithTtl<T extends object>(key: string): Promise<{ value: T; ttlMs: number } | undefined> {
    return (await this.getManyWithTtl<T>([key]))[0];
  }

  /** `getWithTtl` of several keys in one round trip (GET and PTTL of each, pipelined); on a failure, every one a miss. */
  async getManyWithTtl<T extends object>(keys: readonly string[]): Promise<Array<{ value: T; ttlMs: number } | undefined>> {
    const misses = keys.map(() => undefined);
    if (keys.length === 0 || !this.connected('get')) return misses;
    const sentAt = this.clock.now();
    try {
      const pipeline = this.client.pipeline();
      for (const key of keys) pipeline.get(this.keyPrefix + key).pttl(this.keyPrefix + key);
      const replies = (await this.withinBudget(() => pipeline.exec(), null)) as Array<[Error | null, unknown]> | null;
      if (replies === null) return misses;
      const receivedAt = this.clock.now();
      return keys.map((_, index) => {
        const [[getError, text], [ttlError, ttlMs]] = [replies[2 * index], replies[2 * index + 1]] as [[Error | null, string | null], [Error | null, number]];
        if (getError ?? ttlError) throw getError ?? ttlError;
        if (text === null) return undefined;
        // PTTL -1 (no expiry) is not written by this store; such an entry is served but never kept in process.
        return { value: JSON.parse(text) as T, ttlMs: ttlMs > 0 ? ttlMs - (receivedAt - sentAt) : 0 };
      });
    } catch (error) {
      this.failed('get', error);
      return misses;
    }
  }

  async set(key: string, value: object, ttlSeconds: number, unless?: string): Promise<void> {
    await this.write(key, value, ttlSeconds, unless);
  }

  /** `set`, resolving whether Redis took the entry (not when `unless` is held). */
  async write(key: string, value: object, ttlSeconds: number, unless?: string): Promise<boolean> {
    if (ttlSeconds <= 0 || !this.connected('set')) return false;
    const entry = this.keyPrefix + key;
    try {
      return await this.withinBudget(
        async () =>
          unless === undefined
            ? (await this.client.set(entry, JSON.stringify(value), 'EX', ttlSeconds)) === 'OK'
            : (await this.client.eval(SET_UNLESS_MARKED, 2, entry, this.keyPrefix + unless, JSON.stringify(value), ttlSeconds)) === 1,
        false,
      );
    } catch (error) {
      this.failed('set', error);
      return false;
    }
  }

  /** Unlike reads and writes, an erasure must not be degraded to nothing: a failure is thrown. */
  async delete(keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    return this.client.del(...keys.map((key) => this.keyPrefix + key));
  }

  /** Unlike writes, an erasure's mark must not be degraded to nothing: a failure is thrown. */
  async mark(key: string, ttlSeconds: number): Promise<void> {
    await this.client.set(this.keyPrefix + key, '1', 'EX', ttlSeconds);
  }

  /**
   * Tells every instance's in-process tier to drop these keys (TieredLookupCacheStore listens): the
   * instances holding a copy forget it at once instead of at its TTL. Keyed hashes only, never a number.
   */
  async broadcastForget(keys: string[]): Promise<void> {
    await this.client.publish(this.forgetChannel, JSON.stringify(keys));
  }

  /** The channel of broadcastForget, under the key prefix so deployments sharing a Redis stay apart. */
  get forgetChannel(): string {
    return `${this.keyPrefix}forget`;
  }

  async ping(): Promise<boolean> {
    if (this.client.status !== 'ready') return false;
    try {
      return (await this.client.ping()) === 'PONG';
    } catch {
      return false;
    }
  }

  /** While disconnected, skip Redis at once (ioredis would still arm a command timer per rejected command). */
  private connected(operation: string): boolean {
    if (this.client.status === 'ready') return true;
    this.failed(operation, new Error(`not connected (${this.client.status})`));
    return false;
  }

  private failed(operation: string, error: unknown): void {
    this.failures += 1;
    this.warn(`Redis ${operation} failed, degrading to the provider: ${error instanceof Error ? error.message : String(error)}`);
  }

  /** At most one warning every 30 s: a Redis outage must not flood the log. */
  private warn(message: string): void {
    const now = this.clock.now();
    if (now - this.lastWarningAt < 30_000) return;
    this.lastWarningAt = now;
    this.logger.warn(message);
  }
}
