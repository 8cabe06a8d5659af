import Redis from 'ioredis';
import { randomBytes } from 'node:crypto';
import { COUNT_ONLY } from '../src/rate-limit/rate-limit-policy';
import type { StorageRecord } from '../src/rate-limit/rate-limit-storage';
import { createRedisClient, firstConnection, RedisRateLimitStorage } from '../src/rate-limit/redis-rate-limit.storage';
import { OwnRedis, startOwnRedis } from './faults/helpers/own-redis';
import { eventually } from './helpers/eventually';

const WINDOW_MS = 60_000;

/**
 * The plan count with Redis (src/rate-limit/redis-rate-limit.storage.ts): the hits of one key that
 * arrive in the same turn of the event loop are counted by one script call, each hit told its own
 * place in the window. Against a redis-server of the suite's own (a fresh script cache, MONITOR seeing
 * only these commands, and one it can freeze).
 */
describe('Plan count in Redis: the hits of one key in a turn are counted by one script call', () => {
  let redis: OwnRedis;
  let prefix: string;
  const opened: RedisRateLimitStorage[] = [];
  const monitors: Redis[] = [];

  beforeAll(async () => {
    redis = await startOwnRedis();
  });
  afterAll(async () => {
    await redis.stop();
  });
  beforeEach(() => {
    prefix = `pf:test:${randomBytes(6).toString('hex')}:rl:`;
  });
  afterEach(async () => {
    redis.thaw();
    await Promise.all(opened.splice(0).map((storage) => storage.close()));
    for (const monitor of monitors.splice(0)) monitor.disconnect();
  });

  /** One instance of the service's storage (its own connection, the service's client options). */
  async function instance(): Promise<RedisRateLimitStorage> {
    const client = createRedisClient(redis.url, prefix);
    await firstConnection(client);
    const storage = new RedisRateLimitStorage(client);
    opened.push(storage);
    return storage;
  }

  /** Counts the script calls Redis itself runs (MONITOR), EVALSHA and its EVAL fallback alike. */
  async function scriptCallsSeen(): Promise<() => Promise<number>> {
    const client = new Redis(redis.url);
    // MONITOR runs on a connection of its own; a third one sends the markers. All are closed after the test.
    const monitor = await client.monitor();
    const marker = new Redis(redis.url);
    monitors.push(client, monitor, marker);
    let calls = 0;
    const markersSeen = new Set<string>();
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (/^eval(sha)?$/i.test(args[0]) && args.some((arg) => arg.startsWith(prefix))) calls += 1;
      if (/^echo$/i.test(args[0])) markersSeen.add(args[1]);
    });
    return async () => {
      // MONITOR reports commands in the order Redis ran them: once a marker sent after the counts is
      // reported, every count that ran before it has been.
      const sent = `marker-${randomBytes(4).toString('hex')}`;
      await marker.echo(sent);
      await eventually(() => markersSeen.has(sent), Boolean, 10_000, 10);
      expect(markersSeen.has(sent)).toBe(true);
      return calls;
    };
  }

  const hit = (storage: RedisRateLimitStorage, key: string, limit = 1000, blockMs = 0, windowMs = WINDOW_MS) =>
    storage.increment(key, windowMs, limit, blockMs, 'plan');

  it('counts 50 concurrent hits with one script call, each hit with its own place in the window', async () => {
    const storage = await instance();
    const scriptCalls = await scriptCallsSeen();
    const records = await Promise.all(Array.from({ length: 50 }, () => hit(storage, 'account:a')));
    expect(await scriptCalls()).toBe(1);
    expect(records.map((record) => record.totalHits)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(records.every((record) => !record.isBlocked && record.timeToExpire === WINDOW_MS / 1000)).toBe(true);
    const raw = new Redis(redis.url);
    expect(await raw.get(`${prefix}{account:a:plan}:hits`)).toBe('50');
    raw.disconnect();
    // The next turn's hits continue the same window, with a script call of their own.
    expect((await hit(storage, 'account:a')).totalHits).toBe(51);
    expect(await scriptCalls()).toBe(2);
  });

  it('counts the hits that arrive while a script call is in flight in the next one, exactly', async () => {
    const storage = await instance();
    const scriptCalls = await scriptCallsSeen();
    const first = Array.from({ length: 10 }, () => hit(storage, 'account:b'));
    // After the first group left (its flush ran) and before its reply came back.
    await new Promise((resolve) => setImmediate(resolve));
    const second = Array.from({ length: 10 }, () => hit(storage, 'account:b'));
    const counts = (await Promise.all([...first, ...second])).map((record) => record.totalHits);
    expect(counts).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(await scriptCalls()).toBe(2);
  });

  it('keeps keys and windows apart within one turn: one script call per key and window, each count its own', async () => {
    const storage = await instance();
    const scriptCalls = await scriptCallsSeen();
    const hits = await Promise.all(['a', 'b', 'a', 'c', 'a', 'b'].map((account) => hit(storage, `account:${account}`)));
    expect(hits.map((record) => record.totalHits)).toEqual([1, 1, 2, 1, 3, 2]);
    expect(await scriptCalls()).toBe(3);
    // A plan changed in the middle of a burst: two windows' lengths for one key in one turn, one count.
    const mixed = await Promise.all([hit(storage, 'account:d', 1000, 0, 60_000), hit(storage, 'account:d', 1000, 0, 30_000), hit(storage, 'account:d', 1000, 0, 60_000)]);
    expect(mixed.map((record) => record.totalHits).sort()).toEqual([1, 2, 3]);
  });

  it('blocks from the first hit past the limit, as hits counted one by one would', async () => {
    const storage = await instance();
    const burst = await Promise.all(Array.from({ length: 8 }, () => hit(storage, 'address:x', 5, 10_000)));
    expect(burst.map((record) => record.isBlocked)).toEqual([false, false, false, false, false, true, true, true]);
    expect(burst.map((record) => record.timeToBlockExpire)).toEqual([0, 0, 0, 0, 0, 10, 10, 10]);
    // A block set before the hits blocks every one of them.
    const later = await Promise.all([hit(storage, 'address:x', 5, 10_000), hit(storage, 'address:x', 5, 10_000)]);
    expect(later.map((record: StorageRecord) => [record.totalHits, record.isBlocked])).toEqual([
      [9, true],
      [10, true],
    ]);
  });

  it('stays exact across instances sharing the window: every count from 1 to N given once', async () => {
    const [one, two] = [await instance(), await instance()];
    const calls = Array.from({ length: 200 }, (_, i) => hit(i % 2 === 0 ? one : two, 'account:shared', COUNT_ONLY));
    const counts = (await Promise.all(calls)).map((record) => record.totalHits).sort((x, y) => x - y);
    expect(counts).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
  });

  it('fails every hit of the group within the command timeout when Redis does not answer, and counts again once it does', async () => {
    const storage = await instance();
    redis.freeze();
    // Settled while Redis is still frozen: the command timeout, not Redis coming back, ends the wait.
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => hit(storage, 'account:frozen')));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
    expect((outcomes[0] as PromiseRejectedResult).reason).toMatchObject({ message: expect.stringMatching(/timed out/i) });
    redis.thaw();
    const after = await hit(storage, 'account:after-thaw');
    expect(after.totalHits).toBe(1);
  });

  it('never counts a hit twice: one given up on while Redis hung is not sent again after a reconnect', async () => {
    const storage = await instance();
    redis.freeze();
    await expect(hit(storage, 'account:resend')).rejects.toThrow(/timed out/i);
    // The hung Redis dies and comes back empty; the client reconnects.
    await redis.stop();
    await redis.start();
    if (storage.redis.status !== 'ready') await new Promise((resolve) => storage.redis.once('ready', resolve));
    expect((await hit(storage, 'account:resend')).totalHits).toBe(1);
  });

  it('fails every hit of the group when the connection is gone', async () => {
    const storage = await instance();
    storage.redis.disconnect();
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => hit(storage, 'account:down')));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'rejected']);
  });
});
