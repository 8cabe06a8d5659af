import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import type { EnabledChecks } from '../../../src/checks/checks';
import { keyedHash } from '../../../src/common/keyed-hash';
import { MemoryLookupCacheStore } from '../../../src/provider/cache/lookup-cache.store';
import { TieredLookupCacheStore } from '../../../src/provider/cache/tiered-lookup-cache.store';
import { startUpstreamSimulator, UpstreamSimulator } from '../../../tools/upstream-simulator/simulator';
import { ManualClock } from '../../helpers/manual-clock';
import { deferred } from '../lookups';
import { hlrLookupsEnv, ProviderTestModule, startProviderModule } from '../../provider-helpers';

const NETWORK_ONLY: EnabledChecks = { network_status: true, line_type: false, portability: false };

/**
 * The lookup cache's rules about time, on the clock (moved from lookup-cache-tiers and freshness e2e,
 * which slept through TTLs and ages): the in-process copies expire by the clock, never later than the
 * Redis entry they mirror; the in-memory store's entries at their TTL; a caller's max-age against the
 * clock's age of the answer.
 */
describe('Redis lookup cache with its in-process tier (REDIS_URL set)', () => {
  const redisUrl = process.env.TEST_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = `pf-test-tiers-${randomBytes(4).toString('hex')}:`;
  let sim: UpstreamSimulator;
  let redis: Redis;
  let clock: ManualClock;
  const instances: ProviderTestModule[] = [];
  /** An instance on the shared clock (instances of one deployment read the same time). */
  const instance = async () => {
    // No case here is about the upstream's deadline: a generous one, as the in-process simulator answers
    // late on a loaded machine (300 ms, hlrLookupsEnv's, failed a lookup beside the fault suite and two busy loops).
    const started = await startProviderModule(hlrLookupsEnv(sim.url, { REDIS_URL: redisUrl, CACHE_KEY_PREFIX: prefix, PROVIDER_TIMEOUT_MS: '5000' }), ['error'], { clock });
    instances.push(started);
    return started;
  };

  beforeAll(async () => {
    sim = await startUpstreamSimulator();
    redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000 });
    await redis.connect();
    clock = new ManualClock();
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

  /**
   * Issue 35 point 2: a write Redis took just before an erasure, whose reply arrives after the erasure
   * dropped the key here, must not leave a copy in process (Redis lost it to the erasure's delete). And
   * once the erasure's mark is held, a write is refused in Redis itself (one script: mark checked, entry set).
   */
  it('keeps no in-process copy of a write answered after an erasure dropped its key, and writes nothing while the mark is held', async () => {
    const { store } = await instance();
    const tiered = store as TieredLookupCacheStore;
    const key = `v4:network_status:${randomBytes(8).toString('hex')}`;
    const mark = `erased:${randomBytes(8).toString('hex')}`;
    const reply = deferred();
    const taken = deferred();
    const write = tiered.shared.write.bind(tiered.shared);
    const held = jest.spyOn(tiered.shared, 'write').mockImplementationOnce(async (...args) => {
      const took = await write(...args);
      taken.resolve();
      await reply.promise;
      return took;
    });
    try {
      const writing = tiered.set(key, { answer: 'x' }, 3600, mark);
      await taken.promise;
      expect(await redis.exists(`${prefix}${key}`)).toBe(1);
      await tiered.mark(mark, 3600);
      expect(await tiered.delete([key])).toBe(1);
      reply.resolve();
      await writing;
    } finally {
      held.mockRestore();
    }
    expect(await tiered.get(key)).toBeUndefined();
    await tiered.set(key, { answer: 'y' }, 3600, mark);
    expect(await redis.exists(`${prefix}${key}`)).toBe(0);
    expect(await tiered.get(key)).toBeUndefined();
  });

  /** Review of 86ed38e, point 3: a read sent before an erasure and answered after it copied the erased entry into process memory. */
  it('keeps no in-process copy of a read answered after an erasure dropped its key', async () => {
    const { store } = await instance();
    const tiered = store as TieredLookupCacheStore;
    const key = `v4:network_status:${randomBytes(8).toString('hex')}`;
    expect(await tiered.shared.write(key, { answer: 'x' }, 3600)).toBe(true);
    const reply = deferred();
    const read = deferred();
    const get = tiered.shared.getWithTtl.bind(tiered.shared);
    const held = jest.spyOn(tiered.shared, 'getWithTtl').mockImplementationOnce(async (...args) => {
      const found = await get(...args);
      read.resolve();
      await reply.promise;
      return found;
    });
    let answered: object | undefined;
    try {
      const reading = tiered.get(key);
      await read.promise;
      // Not broadcast: the drop of the read's key is this instance's own, not a message that comes back
      // later and would clear a wrongly kept copy by luck (as another instance's erasure, heard while the read was out).
      expect(await tiered.delete([key], false)).toBe(1);
      reply.resolve();
      answered = await reading;
    } finally {
      held.mockRestore();
    }
    // The caller that asked before the erasure gets what Redis answered then; nothing is kept of it.
    expect(answered).toEqual({ answer: 'x' });
    expect(await redis.exists(`${prefix}${key}`)).toBe(0);
    expect(await tiered.get(key)).toBeUndefined();
  });

  it('keeps a copy it read no longer than Redis keeps the entry it was read from', async () => {
    const reader = await instance();
    const key = `tier-test:read:${randomBytes(4).toString('hex')}`;
    await redis.set(prefix + key, JSON.stringify({ answer: 'short-lived' }), 'PX', 60_000);
    await expect(reader.store.get(key)).resolves.toEqual({ answer: 'short-lived' });
    // A newer entry in Redis is not seen while the copy lives (the copy answers, no round trip)...
    await redis.set(prefix + key, JSON.stringify({ answer: 'newer' }), 'PX', 60_000);
    await clock.advance(50_000);
    await expect(reader.store.get(key)).resolves.toEqual({ answer: 'short-lived' });
    // ...and is once the first entry's TTL (what Redis had left when it was read, at most 60 s) has run out.
    await clock.advance(10_001);
    await expect(reader.store.get(key)).resolves.toEqual({ answer: 'newer' });
  });

  it('keeps a copy it wrote no longer than the TTL it wrote to Redis', async () => {
    const writer = await instance();
    const key = `tier-test:write:${randomBytes(4).toString('hex')}`;
    await writer.store.set(key, { answer: 'written' }, 30);
    const pttl = await redis.pttl(prefix + key);
    expect(pttl).toBeGreaterThan(0);
    expect(pttl).toBeLessThanOrEqual(30_000);
    await redis.set(prefix + key, JSON.stringify({ answer: 'newer' }), 'PX', 60_000);
    await clock.advance(30_000); // an entry lives its TTL (lru-cache: stale once older than it)
    await expect(writer.store.get(key)).resolves.toEqual({ answer: 'written' });
    await clock.advance(1);
    await expect(writer.store.get(key)).resolves.toEqual({ answer: 'newer' });
  });

  it('answers nothing for an entry that expired everywhere', async () => {
    const [writer, reader] = [await instance(), await instance()];
    const key = `tier-test:gone:${randomBytes(4).toString('hex')}`;
    await writer.store.set(key, { answer: 'brief' }, 30);
    await expect(reader.store.get(key)).resolves.toEqual({ answer: 'brief' });
    await redis.del(prefix + key); // Redis's own expiry (its time, not ours): the entry is gone there
    await expect(writer.store.get(key)).resolves.toEqual({ answer: 'brief' });
    await expect(reader.store.get(key)).resolves.toEqual({ answer: 'brief' });
    await clock.advance(30_001);
    await expect(writer.store.get(key)).resolves.toBeUndefined();
    await expect(reader.store.get(key)).resolves.toBeUndefined();
  });
});

describe('the in-memory lookup cache and the age a caller accepts (no REDIS_URL)', () => {
  let clock: ManualClock;
  let t: ProviderTestModule;
  beforeAll(async () => {
    clock = new ManualClock();
    t = await startProviderModule({ PROVIDER: 'sandbox' }, ['error'], { clock });
  });
  afterAll(() => t?.close());

  /** Plan-valid UK mobile numbers ending in 0005: the sandbox's status alternates at each live lookup (CONNECTED first). */
  let block = 10;
  const alternatingNumber = () => `+447400${String(block++).padStart(2, '0')}0005`;
  const status = async (phone: string, maxAgeSeconds?: number) => (await t.phoneAnswer(phone, NETWORK_ONLY, { maxAgeSeconds })).status;

  it('keeps an answer for its check’s TTL by the clock, then looks the number up again', async () => {
    expect(t.store).toBeInstanceOf(MemoryLookupCacheStore);
    const ttlMs = t.registry.cacheTtlSeconds('network_status') * 1000;
    const phone = alternatingNumber();
    expect(await status(phone)).toBe('CONNECTED');
    await clock.advance(ttlMs);
    expect(await status(phone)).toBe('CONNECTED'); // from the cache: an entry lives its TTL
    await clock.advance(1);
    expect(await status(phone)).toBe('ABSENT'); // expired: looked up again
  });

  it('with max-age=N uses a cached answer no older than N seconds by the clock, and looks up one older than that', async () => {
    const phone = alternatingNumber();
    expect(await status(phone)).toBe('CONNECTED');
    expect(await status(phone, 3600)).toBe('CONNECTED');
    await clock.advance(1000);
    expect(await status(phone, 1)).toBe('CONNECTED'); // exactly one second old
    await clock.advance(1);
    expect(await status(phone, 1)).toBe('ABSENT'); // older: looked up, and the cache refreshed
    expect(await status(phone, 3600)).toBe('ABSENT');
  });

  it("stamps each answer with the clock's time of the lookup", async () => {
    const phone = alternatingNumber();
    const report = await t.lookups.lookUp(phone, NETWORK_ONLY);
    expect(report.answers.network_status.observedAt).toBe(clock.date().toISOString());
  });
});

