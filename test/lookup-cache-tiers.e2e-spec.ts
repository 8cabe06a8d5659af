import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { EnabledChecks } from '../src/checks/checks';
import { keyedHash } from '../src/common/keyed-hash';
import { TieredLookupCacheStore } from '../src/provider/cache/tiered-lookup-cache.store';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { hlrLookupsEnv, ProviderTestModule, startProviderModule } from './provider-helpers';

const NETWORK_ONLY: EnabledChecks = { network_status: true, line_type: false, portability: false };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The in-process tier in front of the Redis cache (REDIS_URL set): shared entries, TTLs kept. */
describe('Redis lookup cache with its in-process tier', () => {
  const redisUrl = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `pf-test-tiers-${randomBytes(4).toString('hex')}:`;
  let sim: UpstreamSimulator;
  let redis: Redis;
  const instances: ProviderTestModule[] = [];
  const instance = async () => {
    const started = await startProviderModule(hlrLookupsEnv(sim.url, { REDIS_URL: redisUrl, CACHE_KEY_PREFIX: prefix }));
    instances.push(started);
    return started;
  };

  beforeAll(async () => {
    sim = await startUpstreamSimulator();
    redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000 });
    await redis.connect();
  });
  afterAll(async () => {
    await Promise.all(instances.map((started) => started.close()));
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    await sim.close();
  });

  it('answers a number asked again from the process; another instance finds the entry in Redis', async () => {
    const [first, second, third] = [await instance(), await instance(), await instance()];
    expect(first.store).toBeInstanceOf(TieredLookupCacheStore);
    const phone = '+447400124242';
    sim.resetStats();
    const answer = await first.lookupAnswers(phone, NETWORK_ONLY);
    await expect(second.lookupAnswers(phone, NETWORK_ONLY)).resolves.toEqual(answer);
    expect(sim.stats().requests).toBe(1);
    expect(second.lookups.counters.cache).toMatchObject({ hits: 1, misses: 0, store: 'redis' });

    // Gone from Redis: the two instances that hold it answer from their process, a third asks the provider.
    const stored = await redis.keys(`${prefix}*network_status:${keyedHash(first.config.dataHashKey, phone)}`);
    expect(stored).toHaveLength(1);
    expect(await redis.del(stored[0])).toBe(1);
    await expect(first.lookupAnswers(phone, NETWORK_ONLY)).resolves.toEqual(answer);
    await expect(second.lookupAnswers(phone, NETWORK_ONLY)).resolves.toEqual(answer);
    expect(sim.stats().requests).toBe(1);
    await expect(third.lookupAnswers(phone, NETWORK_ONLY)).resolves.toEqual(answer);
    expect(sim.stats().requests).toBe(2);
  });

  it('drops every in-process copy when its erasure listener was away, since a forget sent meanwhile never arrives', async () => {
    const started = await instance();
    const phone = '+447400124343';
    sim.resetStats();
    const answer = await started.lookupAnswers(phone, NETWORK_ONLY);
    // Only the process holds it now: as after a forget broadcast that this instance missed.
    const stored = await redis.keys(`${prefix}*network_status:${keyedHash(started.config.dataHashKey, phone)}`);
    expect(await redis.del(stored[0])).toBe(1);
    await expect(started.lookupAnswers(phone, NETWORK_ONLY)).resolves.toEqual(answer);
    expect(sim.stats().requests).toBe(1);

    const subscriber = (started.store as unknown as { subscriber: Redis }).subscriber;
    const back = new Promise((resolve) => subscriber.once('ready', resolve));
    subscriber.disconnect(true); // dropped, and connected again by ioredis
    await back;
    await expect(started.lookupAnswers(phone, NETWORK_ONLY)).resolves.toEqual(answer);
    expect(sim.stats().requests).toBe(2);
  });

  it('keeps a copy it read no longer than Redis keeps the entry it was read from', async () => {
    const reader = await instance();
    const key = `tier-test:read:${randomBytes(4).toString('hex')}`;
    await redis.set(prefix + key, JSON.stringify({ answer: 'short-lived' }), 'PX', 2000);
    await expect(reader.store.get(key)).resolves.toEqual({ answer: 'short-lived' });
    // A newer entry in Redis is not seen while the copy lives (the copy answers, no round trip)...
    await redis.set(prefix + key, JSON.stringify({ answer: 'newer' }), 'PX', 60_000);
    await expect(reader.store.get(key)).resolves.toEqual({ answer: 'short-lived' });
    // ...and is once the first entry's TTL has run out: the copy expired with it.
    await sleep(2050);
    await expect(reader.store.get(key)).resolves.toEqual({ answer: 'newer' });
  });

  it('keeps a copy it wrote no longer than the TTL it wrote to Redis', async () => {
    const writer = await instance();
    const key = `tier-test:write:${randomBytes(4).toString('hex')}`;
    await writer.store.set(key, { answer: 'written' }, 1);
    const pttl = await redis.pttl(prefix + key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(1000);
    await redis.set(prefix + key, JSON.stringify({ answer: 'newer' }), 'PX', 60_000);
    await expect(writer.store.get(key)).resolves.toEqual({ answer: 'written' });
    await sleep(1050);
    await expect(writer.store.get(key)).resolves.toEqual({ answer: 'newer' });
  });

  it('answers nothing for an entry that expired everywhere', async () => {
    const [writer, reader] = [await instance(), await instance()];
    const key = `tier-test:gone:${randomBytes(4).toString('hex')}`;
    await writer.store.set(key, { answer: 'brief' }, 1);
    await expect(reader.store.get(key)).resolves.toEqual({ answer: 'brief' });
    await sleep(1050);
    await expect(writer.store.get(key)).resolves.toBeUndefined();
    await expect(reader.store.get(key)).resolves.toBeUndefined();
  });
});
