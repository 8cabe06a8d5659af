import { OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { LookupCacheStore, RedisLookupCacheStore } from './lookup-cache.store';

/**
 * Redis (shared by every instance) behind a bounded in-process tier, so a number asked again on this
 * instance is answered without a round trip. An entry is kept in process no longer than Redis keeps
 * it: from a write Redis took, for the TTL written (counted from before Redis got it); from a read, for the PTTL
 * Redis reported (counted from before the read was sent). No answer outlives its TTL, and another
 * instance finds in Redis what this one wrote. An answer another instance writes later for the same
 * key is seen here once the copy held here expires: never later than the TTL of the copy's own answer.
 */
export class TieredLookupCacheStore extends LookupCacheStore implements OnModuleInit, OnModuleDestroy {
  readonly kind = 'redis';
  private readonly local: LRUCache<string, object>;

  constructor(
    readonly shared: RedisLookupCacheStore,
    maxEntries: number,
  ) {
    super();
    this.local = new LRUCache<string, object>({ max: maxEntries });
  }

  get errors(): number {
    return this.shared.errors;
  }

  onModuleInit(): Promise<void> {
    return this.shared.onModuleInit();
  }

  onModuleDestroy(): Promise<void> {
    return this.shared.onModuleDestroy();
  }

  async get<T extends object>(key: string): Promise<T | undefined> {
    const held = this.local.get(key);
    if (held !== undefined) return held as T;
    const found = await this.shared.getWithTtl<T>(key);
    if (found === undefined) return undefined;
    const value = Object.freeze(found.value);
    if (found.ttlMs >= 1) this.local.set(key, value, { ttl: Math.floor(found.ttlMs) });
    return value;
  }

  /** Kept in process only once Redis has it: the tier mirrors Redis, it never answers what Redis could not keep. */
  async set(key: string, value: object, ttlSeconds: number): Promise<void> {
    const sentAt = performance.now();
    if (!(await this.shared.write(key, value, ttlSeconds))) return;
    // Counted from before Redis got it, so the copy ends no later than the entry.
    const ttlMs = ttlSeconds * 1000 - (performance.now() - sentAt);
    if (ttlMs >= 1) this.local.set(key, Object.freeze(value), { ttl: Math.floor(ttlMs) });
  }

  ping(): Promise<boolean> {
    return this.shared.ping();
  }
}
