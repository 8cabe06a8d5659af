import { Clock, SystemClock } from '../common/clock';
import { WindowCount } from './rate-limit-policy';
import { RateLimitStorage, StorageRecord } from './rate-limit-storage';

interface Entry {
  count: number;
  expiresAt: number;
}

const SWEEP_INTERVAL_MS = 10_000;

/**
 * Counts in this process only. The same algorithm as the Redis storage's script (a fixed window opened
 * by the first hit; past `limit`, a block of `blockDuration`), so one instance without Redis limits
 * exactly like a fleet with it. @nestjs/throttler's own memory storage uses a sliding log instead.
 */
export class MemoryRateLimitStorage extends RateLimitStorage {
  private readonly entries = new Map<string, Entry>();
  private nextSweep = 0;

  /** Windows and blocks are timed by `clock` (the injected Clock; the machine's when built outside Nest). */
  constructor(private readonly clock: Clock = new SystemClock()) {
    super();
  }

  async increment(key: string, ttlMs: number, limit: number, blockDurationMs: number, throttlerName: string): Promise<StorageRecord> {
    const now = this.clock.now();
    this.sweep(now);
    const hits = this.open(`${key}:${throttlerName}:hits`, now) ?? this.start(`${key}:${throttlerName}:hits`, now, ttlMs);
    hits.count += 1;
    let block = this.open(`${key}:${throttlerName}:blocked`, now);
    if (!block && hits.count > limit && blockDurationMs > 0) block = this.start(`${key}:${throttlerName}:blocked`, now, blockDurationMs);
    return {
      totalHits: hits.count,
      timeToExpire: Math.ceil((hits.expiresAt - now) / 1000),
      isBlocked: block !== undefined,
      timeToBlockExpire: block ? Math.ceil((block.expiresAt - now) / 1000) : 0,
    };
  }

  async peek(key: string, throttlerName: string): Promise<WindowCount | undefined> {
    const now = this.clock.now();
    const hits = this.open(`${key}:${throttlerName}:hits`, now);
    return hits && { hits: hits.count, secondsToReset: Math.ceil((hits.expiresAt - now) / 1000) };
  }

  private open(id: string, now: number): Entry | undefined {
    const entry = this.entries.get(id);
    return entry && entry.expiresAt > now ? entry : undefined;
  }

  private start(id: string, now: number, durationMs: number): Entry {
    const entry = { count: 0, expiresAt: now + durationMs };
    this.entries.set(id, entry);
    return entry;
  }

  /** Forgets closed windows now and then, so idle accounts and addresses do not accumulate. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + SWEEP_INTERVAL_MS;
    for (const [id, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(id);
  }
}
