import Redis from 'ioredis';
import { AdminModule } from '../../../src/admin/admin.module';
import { ErasureService } from '../../../src/admin/erasure.service';
import { keyedHash } from '../../../src/common/keyed-hash';
import { MemoryCounterStore } from '../../../src/risk/counters/memory-counter-store';
import { RiskCounters } from '../../../src/risk/counters/risk-counters';
import { rangesOf } from '../../../src/risk/number-ranges';
import { RiskModule } from '../../../src/risk/risk.module';
import { RiskService } from '../../../src/risk/risk.service';
import { createAccount } from '../../factories/accounts';
import { testRedisUrl } from '../../helpers/redis';
import { deferred } from '../lookups';
import { Medium, startMedium } from '../medium';

/**
 * The risk counters after an erasure (docs/privacy.md, "Erasure"): a verdict or feedback that read
 * before the erasure and writes the counters after its forget brings no trace of the number's hash
 * back. The erasure's mark, set in the script that reads whom to forget, makes the counters' script
 * skip the number's own members; the race is set up by holding the verdict before its counters' write.
 */
describe('risk counters: a verdict or feedback whose write lands after an erasure writes nothing of the number', () => {
  let m: Medium;
  let redis: Redis;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, RiskModule], env: { REDIS_URL: testRedisUrl() } });
    redis = new Redis(testRedisUrl());
  });
  afterAll(async () => {
    redis?.disconnect();
    await m?.close();
  });

  /** Every trace of the number's short hash under the counters' prefix: a key named by it, or a member of a set (the erasure's mark apart). */
  async function traces(e164: string): Promise<string[]> {
    const n = keyedHash(m.config.dataHashKey, e164).slice(0, 16);
    const prefix = m.config.risk.redisPrefix;
    const found: string[] = [];
    for (const key of await redis.keys(`${prefix}*`)) {
      const name = key.slice(prefix.length);
      if (name === `erased:${n}`) continue;
      if (name.includes(n)) found.push(name);
      else if ((await redis.type(key)) === 'zset' && (await redis.zscore(key, n)) !== null) found.push(`${name} ∋ hash`);
    }
    return found;
  }

  /** Holds the next call of RiskCounters.observe (the verdict has read its settings and the number's plan) until released. */
  function holdObserve(): { reached: Promise<void>; release: () => void; restore: () => void } {
    const counters = m.get(RiskCounters);
    const real = counters.observe.bind(counters);
    const reached = deferred();
    const gate = deferred();
    const spy = jest.spyOn(counters, 'observe').mockImplementationOnce(async (ask) => {
      reached.resolve();
      await gate.promise;
      return real(ask);
    });
    return { reached: reached.promise, release: () => gate.resolve(), restore: () => spy.mockRestore() };
  }

  it('a verdict held before its counters’ write, released after the erasure: answered, and no member of the number’s hash in Redis', async () => {
    const account = await createAccount(m, { credits: 100 });
    const e164 = '+447400200101';
    const verdict = () =>
      m.get(RiskService).verdict({ accountId: account.id, keyId: 'medium-test', plan: { name: 'enterprise', limit: 1_000_000, windowSeconds: 1 } }, { phone: e164, ip: '203.0.113.7' });
    await verdict();
    expect(await traces(e164)).not.toEqual([]);

    const held = holdObserve();
    let answer: { body: string } | undefined;
    try {
      const asking = verdict();
      await held.reached;
      expect(await m.get(ErasureService).erase(e164)).toMatchObject({ risk_asks_forgotten: 1 });
      held.release();
      answer = await asking;
    } finally {
      held.release();
      held.restore();
    }
    expect(JSON.parse(answer!.body)).toMatchObject({ recommendation: expect.stringMatching(/^(allow|flag|block)$/) });
    expect(await traces(e164)).toEqual([]);
  });

  it('feedback whose ask was read before the erasure writes nothing of the number after it', async () => {
    const account = await createAccount(m, { credits: 100 });
    const e164 = '+447400200201';
    await m.get(RiskService).verdict({ accountId: account.id, keyId: 'medium-test', plan: { name: 'enterprise', limit: 1_000_000, windowSeconds: 1 } }, { phone: e164 });
    const counters = m.get(RiskCounters);
    const store = counters.store;
    const reading = deferred();
    const gate = deferred();
    // The feedback's second batch (its write) waits until the erasure is done.
    const realBatch = store.batch.bind(store);
    let batches = 0;
    const spy = jest.spyOn(store, 'batch').mockImplementation(() => {
      const batch = realBatch();
      if ((batches += 1) !== 2) return batch;
      const exec = batch.exec.bind(batch);
      batch.exec = async () => {
        reading.resolve();
        await gate.promise;
        return exec();
      };
      return batch;
    });
    let given: Promise<unknown> | undefined;
    try {
      given = counters.feedback(account.id, e164, true, m.clock.now());
      await reading.promise;
      spy.mockRestore();
      await m.get(ErasureService).erase(e164);
      gate.resolve();
      await given;
    } finally {
      gate.resolve();
      spy.mockRestore();
    }
    expect(await traces(e164)).toEqual([]);
  });

  it('in memory (no Redis) the same: an ask of the number after its forget, within the mark’s hour, writes nothing of it', async () => {
    const counters = new RiskCounters(new MemoryCounterStore(m.clock), m.config.dataHashKey);
    const e164 = '+447400200301';
    const ask = () => counters.observe({ accountId: 'a', source: 'web', e164, ranges: rangesOf(e164), country: 'GB', ip: null, at: m.clock.now(), graceSeconds: 600 });
    expect(await ask()).toMatchObject({ rangeHour: 1 });
    expect(await counters.forget(e164, rangesOf(e164))).toBe(1);
    expect(await ask()).toMatchObject({ rangeHour: 0, blockHour: 0 });
    expect(await counters.feedback('a', e164, true, m.clock.now())).toBeUndefined();
    expect(await counters.forget(e164, rangesOf(e164))).toBe(0);
  });
});
