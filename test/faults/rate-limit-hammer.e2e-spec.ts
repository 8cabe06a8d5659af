import Redis from 'ioredis';
import { COUNT_ONLY } from '../../src/rate-limit/rate-limit-policy';
import { MemoryRateLimitStorage } from '../../src/rate-limit/memory-rate-limit.storage';
import { RateLimitStorage } from '../../src/rate-limit/rate-limit-storage';
import { RedisRateLimitStorage } from '../../src/rate-limit/redis-rate-limit.storage';
import { createAccountOver, HttpAccount, Instance, startInstances } from './helpers/instances';
import { LOAD_DEADLINE_MS } from './helpers/load';
import { OwnRedis, startOwnRedis } from './helpers/own-redis';
import { START_DEADLINE_MS } from '../helpers/service-process';

const CLIENTS = 64;
const WINDOWS = 5;
const FREE_LIMIT = 5;

/**
 * `perPlace[k]`: how many windows let a (k+1)-th request through. Hammering `windows` whole windows from
 * the first answer fills `windows` or `windows` + 1 of them with the plan's 5; only the window open when
 * the hammering stops may have fewer. A starved window has none: the count would fall short.
 */
function expectFullWindows(perPlace: number[], windows: number): void {
  const full = perPlace[FREE_LIMIT - 1];
  expect(full).toBeGreaterThanOrEqual(windows);
  expect(full).toBeLessThanOrEqual(windows + 1);
  for (const windows of perPlace) expect([full, full + 1]).toContain(windows);
  expect([...perPlace].sort((a, b) => b - a)).toEqual(perPlace);
}

interface Answer {
  status: number;
  remaining: number;
}

/**
 * `clients` hammering, each sending its next hit as soon as the last one is done, for `windows` windows of
 * 1 s from the first answer (as the server counts them from the first request), one more window at a time
 * until `enough` hits were made, however slow the machine; resolves with the windows it hammered. (The
 * windows' time is the real one, in Redis or in the instance: the test only counts them.)
 */
async function hammerWindows(clients: number, windows: number, enough: (hits: number) => boolean, hit: (i: number) => Promise<void>): Promise<number> {
  let firstAt: number | undefined;
  let hits = 0;
  let hammered = windows;
  const done = () => {
    if (firstAt === undefined || Date.now() < firstAt + hammered * 1000) return false;
    if (enough(hits)) return true;
    hammered++;
    return false;
  };
  const client = async (n: number) => {
    for (let i = n; !done(); i++) {
      await hit(i);
      firstAt ??= Date.now();
      hits++;
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, n) => client(n)));
  return hammered;
}

/** 64 clients, each sending its next request as soon as the last one answered, alternating between the instances. */
async function hammer(instances: Instance[], account: HttpAccount): Promise<{ answers: Answer[]; windows: number }> {
  const answers: Answer[] = [];
  const windows = await hammerWindows(CLIENTS, WINDOWS, (hits) => hits > WINDOWS * 50, async (i) => {
    const res = await fetch(`${instances[i % instances.length].url}/api/v1/balance`, { headers: account.auth });
    await res.arrayBuffer();
    answers.push({ status: res.status, remaining: Number(res.headers.get('ratelimit-remaining')) });
  });
  return { answers, windows };
}

describe('a free-plan client hammering two instances sharing one Redis', () => {
  let redis: OwnRedis | undefined;
  let instances: Instance[] = [];

  beforeAll(async () => {
    redis = await startOwnRedis();
    // The count in Redis is what is tested: a busy machine's slow Redis replies must not send the calls on
    // without it (REDIS_CALL_BUDGET_MS, whose own tests are elsewhere).
    instances = await startInstances(2, { REDIS_URL: redis.url, REDIS_CALL_BUDGET_MS: '10000' });
  }, 2 * START_DEADLINE_MS);
  afterAll(async () => {
    await Promise.all(instances.map((one) => one.kill()));
    await redis?.stop();
  });

  it('gets exactly the plan, 5 per window, in every window', async () => {
    const account = await createAccountOver(instances[0].url, { plan: 'free', credits: 100 });

    const { answers, windows } = await hammer(instances, account);

    const ok = answers.filter((answer) => answer.status === 200);
    expect(answers.filter((answer) => answer.status !== 200 && answer.status !== 429)).toEqual([]);
    expect(answers.length).toBeGreaterThan(WINDOWS * 50); // it really hammered
    // Within a window the 200s say 4, 3, 2, 1, 0 requests remain: as many of each as windows served.
    const byRemaining = [4, 3, 2, 1, 0].map((remaining) => ok.filter((answer) => answer.remaining === remaining).length);
    expectFullWindows(byRemaining, windows);
    expect(ok.length).toBe(byRemaining.reduce((sum, n) => sum + n, 0));
  }, 2 * LOAD_DEADLINE_MS);
});

/**
 * Over HTTP, this machine's two instances answer a few hundred requests a second; the starvation of
 * the old counting script showed at thousands (a hit landing in the window's last millisecond carried
 * the count over). The counting itself, hammered directly, reaches that rate: in Redis through two
 * connections (two instances), and in memory (one instance).
 */
describe.each([
  ['the shared Redis count, through two connections', true],
  ['the in-memory count', false],
])('%s, hammered', (_name, withRedis) => {
  let redis: OwnRedis | undefined;
  let storages: RateLimitStorage[] = [];

  beforeAll(async () => {
    if (!withRedis) return void (storages = [new MemoryRateLimitStorage()]);
    redis = await startOwnRedis();
    storages = [new RedisRateLimitStorage(new Redis(redis.url)), new RedisRateLimitStorage(new Redis(redis.url))];
  });
  afterAll(async () => {
    await Promise.all(storages.map((storage) => storage.close()));
    await redis?.stop();
  });

  it('opens a new window of 5 every second, however fast it is hit', async () => {
    // How many hits were counted 1st, 2nd, … in their window (and in all).
    const tally = new Map<number, number>();
    let total = 0;
    const windows = await hammerWindows(CLIENTS, WINDOWS, (hits) => hits > WINDOWS * 2000, async (i) => {
      const record = await storages[i % storages.length].increment('account:hammered', 1000, COUNT_ONLY, 1000, 'plan');
      total++;
      if (record.totalHits <= FREE_LIMIT + 1) tally.set(record.totalHits, (tally.get(record.totalHits) ?? 0) + 1);
    });

    expect(total).toBeGreaterThan(WINDOWS * 2000);
    // Each window counts 1, 2, 3, … from its first hit: the plan's 5 let through in each.
    expectFullWindows([1, 2, 3, 4, 5].map((count) => tally.get(count) ?? 0), windows);
  }, 2 * LOAD_DEADLINE_MS);
});
