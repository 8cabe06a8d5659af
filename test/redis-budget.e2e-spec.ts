import Redis from 'ioredis';
import request from 'supertest';
import { RedisBudget } from '../src/common/redis-budget';
import { RedisRateLimitStorage } from '../src/rate-limit/redis-rate-limit.storage';
import { createAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';
import { OwnRedis, startOwnRedis } from './faults/helpers/own-redis';

const BUDGET_MS = 400;

/**
 * The chaos run's "hung Redis costs up to 2.35 s per call" (plan limit 300 ms + cache read 500 ms + a
 * second read 500 ms + write 500 ms): with Redis frozen (SIGSTOP: connections open, no answer), each
 * API request waits on Redis at most REDIS_CALL_BUDGET_MS in all, then goes on without it. Asserted on
 * the service's own counters (common/redis-budget.ts, also on /metrics), not on the test's clock.
 */
describe('one Redis allowance per request (REDIS_CALL_BUDGET_MS)', () => {
  let redis: OwnRedis;
  let t: TestApp;
  beforeAll(async () => {
    redis = await startOwnRedis();
    t = await startTestApp({ REDIS_URL: redis.url, REDIS_CALL_BUDGET_MS: String(BUDGET_MS), LOG_LEVEL: 'silent' });
  });
  afterAll(async () => {
    redis.thaw();
    await t.close();
    await redis.stop();
  });

  it('with Redis frozen, calls answer correctly, each waiting on Redis no longer than the budget, and nothing is sent to Redis past it', async () => {
    const account = await createAccount(t, { plan: 'enterprise', credits: 4 * 20 });
    const budget = t.app.get(RedisBudget);
    // Answered and cached while Redis is well.
    const before = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.ported }).expect(200);
    expect(budget.counters).toMatchObject({ cutShort: 0, skipped: 0, callsOverBudget: 0 });

    redis.freeze();
    try {
      const phones = distinctNumbers(6, 80);
      for (const phone of phones) {
        const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone });
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ valid: true, status: 'CONNECTED' });
      }
      // The cached number: the in-process tier still knows it; the answer is the same.
      const again = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.ported }).expect(200);
      expect(again.body).toEqual(before.body);
    } finally {
      redis.thaw();
    }
    const { counters } = budget;
    // Each of the 6 new numbers hit the frozen Redis: the plan limit's count waited (cut short by the
    // allowance or by its own 300 ms timeout), then the allowance ran out and later operations were not sent.
    expect(counters.callsOverBudget).toBeGreaterThanOrEqual(6);
    expect(counters.skipped).toBeGreaterThanOrEqual(6);
    expect(counters.sentAfterBudget).toBe(0);
    console.info(`Redis frozen: ${JSON.stringify(counters)} (the longest wait is wall-clock time: printed, not asserted)`);

    const metrics = await request(t.http).get('/metrics').expect(200);
    expect(metrics.text).toMatch(/phone_filter_redis_operations_total\{outcome="sent_after_budget"\} 0/);
    expect(metrics.text).toMatch(/phone_filter_redis_calls_over_budget_total [1-9]/);
  });

  it("a plan-limit count coalesced for the end of the turn is not sent when the request's allowance ran out before that turn ended (the fault suite's sent_after_budget 1 under load)", async () => {
    const budget = new RedisBudget(50);
    const client = new Redis(redis.url, { lazyConnect: true });
    await client.connect();
    const storage = new RedisRateLimitStorage(client, budget);
    try {
      const key = `late-turn-${Date.now()}`;
      const outcome = await new Promise<PromiseSettledResult<unknown>>((settle) =>
        budget.middleware({} as never, {} as never, () => {
          const counted = storage.increment(key, 60_000, 10, 0, 'plan');
          // A busy event loop: the turn that queued the count ends only after the allowance has run out.
          const until = performance.now() + 120;
          while (performance.now() < until);
          counted.then((value) => settle({ status: 'fulfilled', value }), (reason: unknown) => settle({ status: 'rejected', reason }));
        }),
      );
      expect(outcome.status).toBe('rejected'); // the plan limit is not applied to that call, as when Redis is down
      expect(budget.counters.sentAfterBudget).toBe(0);
      expect(budget.counters.skipped + budget.counters.cutShort).toBe(1);
      expect(await client.get(`{${key}:plan}:hits`)).toBeNull(); // nothing counted in Redis for it
    } finally {
      await storage.close();
    }
  });
});
