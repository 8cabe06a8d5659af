import type Redis from 'ioredis';
import { Clock, SystemClock } from '../common/clock';
import { WindowCount } from './rate-limit-policy';

/**
 * The counts of the failed-authentication limit: one fixed window per key, opened by its first
 * attempt. `add` counts and answers the new count in ONE atomic step, so concurrent attempts can
 * never all read the same count and all pass.
 */
export interface FailedAuthCounter {
  add(key: string, windowMs: number): Promise<WindowCount>;
}

interface Entry {
  count: number;
  expiresAt: number;
}

const SWEEP_INTERVAL_MS = 10_000;

/** This process's counts: without Redis, and while a configured Redis is unreachable. */
export class MemoryFailedAuthCounter implements FailedAuthCounter {
  private readonly entries = new Map<string, Entry>();
  private nextSweep = 0;

  /** Windows are timed by `clock` (the injected Clock; the machine's when built outside Nest). */
  constructor(private readonly clock: Clock = new SystemClock()) {}

  async add(key: string, windowMs: number): Promise<WindowCount> {
    const now = this.clock.now();
    this.sweep(now);
    let entry = this.entries.get(key);
    if (!entry || entry.expiresAt <= now) {
      entry = { count: 0, expiresAt: now + windowMs };
      this.entries.set(key, entry);
    }
    entry.count += 1;
    return { hits: entry.count, secondsToReset: Math.ceil((entry.expiresAt - now) / 1000) };
  }

  /** Forgets closed windows now and then, so a scan from many addresses does not accumulate. */
  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + SWEEP_INTERVAL_MS;
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }
}

/** INCR and the window's expiry in one script: atomic for every instance sharing the Redis. */
const ADD_SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {hits, ttl}`;

/** Shared counts in Redis (the client's key prefix applies); every call throws while Redis is down. */
export class RedisFailedAuthCounter implements FailedAuthCounter {
  constructor(private readonly redis: Redis) {}

  async add(key: string, windowMs: number): Promise<WindowCount> {
    const [hits, ttlMs] = (await this.redis.eval(ADD_SCRIPT, 1, key, windowMs)) as [number, number];
    return { hits, secondsToReset: Math.ceil(ttlMs / 1000) };
  }
}
