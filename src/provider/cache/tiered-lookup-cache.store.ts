import { Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import { LRUCache } from 'lru-cache';
import { clockedLru, LookupCacheStore, RedisLookupCacheStore } from './lookup-cache.store';

const SUBSCRIBE_WAIT_MS = 2000;
/** How long a drop is remembered: far longer than a write's round trip (its command timeout). */
const DROPPED_KEPT_MS = 60_000;

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
  /**
   * When each key was last dropped here (an erasure, here or broadcast): a write whose Redis reply
   * arrives after the drop keeps no copy in process, though Redis took it before the erasure's delete.
   */
  private readonly droppedAt: LRUCache<string, object>;
  private readonly logger = new Logger('LookupCache');
  /** Listens for erasures made on any instance (RedisLookupCacheStore.broadcastForget). */
  private subscriber: Redis | undefined;

  constructor(
    readonly shared: RedisLookupCacheStore,
    maxEntries: number,
  ) {
    super();
    // Timed by the same Clock as the round trips subtracted from the copies' TTLs.
    this.local = clockedLru(maxEntries, shared.clock);
    this.droppedAt = clockedLru(maxEntries, shared.clock);
  }

  get errors(): number {
    return this.shared.errors;
  }

  async onModuleInit(): Promise<void> {
    await this.shared.onModuleInit();
    // Its own connection (a subscribed one serves nothing else), retrying in the background like the cache's.
    const subscriber = this.shared.client.duplicate({ lazyConnect: true, enableOfflineQueue: true, commandTimeout: undefined, enableAutoPipelining: false });
    this.subscriber = subscriber;
    subscriber.on('error', () => undefined);
    subscriber.on('message', (_channel: string, message: string) => this.dropLocal(message));
    // A forget broadcast sent while this subscriber was away never arrives (pub/sub keeps nothing): once
    // it is back (ioredis subscribes again), every in-process copy goes, and reads come from Redis again.
    let away = false;
    subscriber.on('close', () => (away = true));
    subscriber.on('ready', () => {
      if (away) this.local.clear();
      away = false;
    });
    const subscribed = subscriber.subscribe(this.shared.forgetChannel).catch((error: Error) => {
      this.logger.warn(`Erasures made on other instances reach this one's in-process cache only at its TTL until Redis is back: ${error.message}`);
    });
    // Redis down at start-up must not hold the start: the subscription is made (again) when it is back.
    await Promise.race([subscribed, new Promise((resolve) => setTimeout(resolve, SUBSCRIBE_WAIT_MS).unref())]);
  }

  async onModuleDestroy(): Promise<void> {
    this.subscriber?.disconnect();
    await this.shared.onModuleDestroy();
  }

  /** Redis and every instance's in-process tier (this one's at once, the others' by the broadcast). */
  async delete(keys: string[], broadcast = true): Promise<number> {
    this.forgetLocal(keys);
    const deleted = await this.shared.delete(keys);
    if (broadcast) await this.shared.broadcastForget(keys);
    return deleted;
  }

  private dropLocal(message: string): void {
    try {
      this.forgetLocal(JSON.parse(message) as string[]);
    } catch {
      // Not ours: nothing to drop.
    }
  }

  private forgetLocal(keys: string[]): void {
    const now = this.shared.clock.now();
    for (const key of keys) {
      this.local.delete(key);
      this.droppedAt.set(key, { at: now }, { ttl: DROPPED_KEPT_MS });
    }
  }

  async get<T extends object>(key: string): Promise<T | undefined> {
    const held = this.local.get(key);
    if (held !== undefined) return held as T;
    const sentAt = this.shared.clock.now();
    return this.keepRead(key, await this.shared.getWithTtl<T>(key), sentAt);
  }

  /** The keys held in process answered from here; the others read from Redis in one round trip. */
  override async getMany<T extends object>(keys: readonly string[]): Promise<Array<T | undefined>> {
    const answers = keys.map((key) => this.local.get(key) as T | undefined);
    const missing = keys.filter((_, index) => answers[index] === undefined);
    if (missing.length === 0) return answers;
    const sentAt = this.shared.clock.now();
    const found = await this.shared.getManyWithTtl<T>(missing);
    let next = 0;
    return answers.map((held, index) => (held !== undefined ? held : this.keepRead(keys[index], found[next++], sentAt)));
  }

  /** What Redis answered for `key` (read from `sentAt`), kept in process for its PTTL. */
  private keepRead<T extends object>(key: string, found: { value: T; ttlMs: number } | undefined, sentAt: number): T | undefined {
    if (found === undefined) return undefined;
    const value = Object.freeze(found.value);
    // As for a write: a read sent before an erasure dropped the key, answered after, keeps no copy here
    // (Redis has lost the entry to the erasure's delete); its caller, who asked before, gets its answer.
    const dropped = this.droppedAt.get(key) as { at: number } | undefined;
    if (dropped !== undefined && dropped.at >= sentAt) return value;
    if (found.ttlMs >= 1) this.local.set(key, value, { ttl: Math.floor(found.ttlMs) });
    return value;
  }

  /** Kept in process only once Redis has it: the tier mirrors Redis, it never answers what Redis could not keep. */
  async set(key: string, value: object, ttlSeconds: number, unless?: string): Promise<void> {
    const sentAt = this.shared.clock.now();
    if (!(await this.shared.write(key, value, ttlSeconds, unless))) return;
    const dropped = this.droppedAt.get(key) as { at: number } | undefined;
    if (dropped !== undefined && dropped.at >= sentAt) return;
    // Counted from before Redis got it, so the copy ends no later than the entry.
    const ttlMs = ttlSeconds * 1000 - (this.shared.clock.now() - sentAt);
    if (ttlMs >= 1) this.local.set(key, Object.freeze(value), { ttl: Math.floor(ttlMs) });
  }

  mark(key: string, ttlSeconds: number): Promise<void> {
    return this.shared.mark(key, ttlSeconds);
  }

  ping(): Promise<boolean> {
    return this.shared.ping();
  }
}
