import Redis from 'ioredis';
import { randomBytes } from 'node:crypto';
import { createRedisClient, firstConnection, RedisRateLimitStorage } from './redis-rate-limit.storage';
import type { StorageRecord } from './rate-limit-storage';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const WINDOW_MS = 60_000;

/** A storage on its own key prefix, as one instance of the service has it. */
async function instance(prefix: string): Promise<RedisRateLimitStorage> {
  const redis = createRedisClient(REDIS_URL, prefix);
  await firstConnection(redis);
  return new RedisRateLimitStorage(redis);
}

/** Counts, as Redis itself sees them (MONITOR), the script calls on keys of `prefix`. */
async function scriptCallsSeen(prefix: string): Promise<{ count(): Promise<number>; stop(): Promise<void> }> {
  const client = new Redis(REDIS_URL);
  const monitor = await client.monitor();
  let calls = 0;
  monitor.on('monitor', (_time: string, args: string[]) => {
    if (/^eval(sha)?$/i.test(args[0]) && args.some((arg) => arg.startsWith(prefix))) calls += 1;
  });
  return {
    // MONITOR reports a command after it ran: a PING through it comes back after what came before.
    count: async () => {
      await new Promise((resolve) => setTimeout(resolve, 200));
      return calls;
    },
    stop: async () => {
      monitor.disconnect();
      client.disconnect();
    },
  };
}

describe('RedisRateLimitStorage: the hits of one key in the same turn are counted by one script call', () => {
  let prefix: string;
  const opened: RedisRateLimitStorage[] = [];
  const monitors: Array<{ stop(): Promise<void> }> = [];
  const watch = async () => {
    const seen = await scriptCallsSeen(prefix);
    monitors.push(seen);
    return seen;
  };
  const open = async () => {
    const storage = await instance(prefix);
    opened.push(storage);
    return storage;
  };

  beforeEach(() => {
    prefix = `pf:test:${randomBytes(6).toString('hex')}:rl:`;
  });
  afterEach(async () => {
    await Promise.all([...opened.splice(0).map((storage) => storage.close()), ...monitors.splice(0).map((seen) => seen.stop())]);
  });

  it('counts 50 concurrent hits with one script call, each hit with its own place in the window', async () => {
    const storage = await open();
    const seen = await watch();
    const records = await Promise.all(Array.from({ length: 50 }, () => storage.increment('account:a', WINDOW_MS, 1000, 0, 'plan')));
    expect(await seen.count()).toBe(1);
    expect(records.map((record) => record.totalHits)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(records.every((record) => !record.isBlocked && record.timeToExpire === WINDOW_MS / 1000)).toBe(true);
    expect(await storage.redis.get('{account:a:plan}:hits')).toBe('50');
    // The next turn's hits continue the same window.
    const next = await storage.increment('account:a', WINDOW_MS, 1000, 0, 'plan');
    expect(next.totalHits).toBe(51);
    expect(await seen.count()).toBe(2);
  });

  it('blocks from the first hit past the limit, as hits counted one by one would', async () => {
    const storage = await open();
    const burst = await Promise.all(Array.from({ length: 8 }, () => storage.increment('address:x', WINDOW_MS, 5, 10_000, 'auth')));
    expect(burst.map((record) => record.isBlocked)).toEqual([false, false, false, false, false, true, true, true]);
    expect(burst.slice(5).every((record) => record.timeToBlockExpire === 10)).toBe(true);
    expect(burst.slice(0, 5).every((record) => record.timeToBlockExpire === 0)).toBe(true);
    // A block set before the hits blocks all of them.
    const later = await Promise.all([storage.increment('address:x', WINDOW_MS, 5, 10_000, 'auth'), storage.increment('address:x', WINDOW_MS, 5, 10_000, 'auth')]);
    expect(later.map((record: StorageRecord) => [record.totalHits, record.isBlocked])).toEqual([
      [9, true],
      [10, true],
    ]);
  });

  it('keeps keys apart within one turn: one script call per key, each count its own', async () => {
    const storage = await open();
    const seen = await watch();
    const hits = await Promise.all(['a', 'b', 'a', 'c', 'a', 'b'].map((account) => storage.increment(`account:${account}`, WINDOW_MS, 1000, 0, 'plan')));
    expect(hits.map((record) => record.totalHits)).toEqual([1, 1, 2, 1, 3, 2]);
    expect(await seen.count()).toBe(3);
  });

  it('stays exact across instances sharing the window: every count from 1 to N given once', async () => {
    const [one, two] = [await open(), await open()];
    const calls = Array.from({ length: 200 }, (_, i) => (i % 2 === 0 ? one : two).increment('account:shared', WINDOW_MS, 1000, 0, 'plan'));
    const counts = (await Promise.all(calls)).map((record) => record.totalHits).sort((x, y) => x - y);
    expect(counts).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });

  it('fails every hit of the group when Redis does not take the script', async () => {
    const storage = await open();
    storage.redis.disconnect();
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => storage.increment('account:down', WINDOW_MS, 1000, 0, 'plan')));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
  });
});
