import type { Request } from 'express';
import { randomBytes } from 'node:crypto';
import { Credential, limitedAttempt } from '../auth/api-key.guard';
import { ManualClock } from '../../test/helpers/manual-clock';
import { AppError } from '../common/errors';
import type { AppConfig } from '../config/app-config';
import { FailedAuthLimiter } from './failed-auth.limiter';
import { MemoryRateLimitStorage } from './memory-rate-limit.storage';
import { RateLimitStorage } from './rate-limit-storage';
import { createRedisClient, firstConnection, RedisRateLimitStorage } from './redis-rate-limit.storage';

const LIMIT = 5;
const config = { ipRateLimit: { limit: LIMIT, windowSeconds: 30 } } as AppConfig;
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

function from(address: string): Request {
  return { ip: address, socket: {} } as unknown as Request;
}

const wrong = () => {
  throw new AppError('INVALID_API_KEY', 'Wrong admin token.');
};

/** Runs attempts all at once, as a burst of connections does, and says how each ended. */
async function burst(limiter: FailedAuthLimiter, credential: Credential, verifies: Array<() => unknown>, request: Request) {
  const outcomes = await Promise.allSettled(verifies.map((verify) => limitedAttempt(limiter, request, credential, verify)));
  return outcomes.map((outcome) => (outcome.status === 'fulfilled' ? 200 : (outcome.reason as AppError).status));
}

describe.each([
  ['in memory', async (clock: ManualClock): Promise<RateLimitStorage> => new MemoryRateLimitStorage(clock)],
  [
    'in Redis',
    async (): Promise<RateLimitStorage> => {
      const redis = createRedisClient(REDIS_URL, `pf:test:${randomBytes(6).toString('hex')}:rl:`);
      await firstConnection(redis);
      return new RedisRateLimitStorage(redis);
    },
  ],
])('FailedAuthLimiter %s', (_name, makeStorage) => {
  let storage: RateLimitStorage;
  let limiter: FailedAuthLimiter;
  let clock: ManualClock;
  beforeEach(async () => {
    clock = new ManualClock();
    storage = await makeStorage(clock);
    limiter = new FailedAuthLimiter(storage, config, clock);
  });
  afterEach(() => storage.close());

  it('verifies every admin token of a burst: the wrong ones past the limit get 429, the right one late in it is served', async () => {
    let verified = 0;
    const verifies = Array.from({ length: 200 }, (_, i) => () => {
      verified += 1;
      if (i !== 150) wrong();
    });

    const statuses = await burst(limiter, 'admin_token', verifies, from('203.0.113.1'));

    expect(verified).toBe(200);
    expect(statuses[150]).toBe(200);
    expect(statuses.filter((status) => status === 401)).toHaveLength(LIMIT);
    expect(statuses.filter((status) => status === 429)).toHaveLength(199 - LIMIT);
  });

  it('never counts a verified admin token: an administrator never uses up the limit', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT * 4; i++) statuses.push(...(await burst(limiter, 'admin_token', [() => undefined], from('203.0.113.2'))));
    expect(statuses).toEqual(Array(LIMIT * 4).fill(200));
    expect(await burst(limiter, 'admin_token', Array.from({ length: LIMIT + 1 }, () => wrong), from('203.0.113.2'))).toEqual([
      ...Array(LIMIT).fill(401),
      429,
    ]);
    // 20 wrong ones later, the right one still passes (issue 24 #13).
    await burst(limiter, 'admin_token', Array.from({ length: 20 }, () => wrong), from('203.0.113.2'));
    expect(await burst(limiter, 'admin_token', [() => undefined], from('203.0.113.2'))).toEqual([200]);
  });

  it('always verifies an API key: a valid one passes from a limited address, wrong ones are counted and refused', async () => {
    const address = from('203.0.113.3');
    const flood = await burst(limiter, 'api_key', Array.from({ length: 50 }, () => wrong), address);
    expect(flood.filter((status) => status === 401)).toHaveLength(LIMIT);
    expect(flood.filter((status) => status === 429)).toHaveLength(50 - LIMIT);

    expect(await burst(limiter, 'api_key', [() => 'account'], address)).toEqual([200]);
    // The admin token's count is its own: the flood of wrong keys does not lock the administrator out.
    expect(await burst(limiter, 'admin_token', [() => undefined], address)).toEqual([200]);
  });
});

describe('FailedAuthLimiter while its Redis is down', () => {
  it('counts in this process instead of leaving guesses unlimited', async () => {
    const storage = new RedisRateLimitStorage(createRedisClient('redis://127.0.0.1:1', 'pf:test:down:'));
    const clock = new ManualClock();
    const limiter = new FailedAuthLimiter(storage, config, clock);
    try {
      const statuses = await burst(limiter, 'admin_token', Array.from({ length: LIMIT + 3 }, () => wrong), from('203.0.113.4'));
      expect(statuses.filter((status) => status === 401)).toHaveLength(LIMIT);
      expect(statuses.filter((status) => status === 429)).toHaveLength(3);
      // Its window is this process's, timed by the clock: once it has passed, a wrong token is told 401 again.
      await clock.advance(config.ipRateLimit.windowSeconds * 1000 - 1);
      expect(await burst(limiter, 'admin_token', [wrong], from('203.0.113.4'))).toEqual([429]);
      await clock.advance(1);
      expect(await burst(limiter, 'admin_token', [wrong], from('203.0.113.4'))).toEqual([401]);
    } finally {
      await storage.close();
    }
  });
});
