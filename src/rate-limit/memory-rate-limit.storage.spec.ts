import { ManualClock } from '../../test/helpers/manual-clock';
import { MemoryRateLimitStorage } from './memory-rate-limit.storage';

describe('MemoryRateLimitStorage', () => {
  let clock: ManualClock;
  let storage: MemoryRateLimitStorage;
  beforeEach(() => {
    clock = new ManualClock(1_000_000);
    storage = new MemoryRateLimitStorage(clock);
  });

  it('counts hits in a fixed window opened by the first hit', async () => {
    expect(await storage.increment('a', 1000, 100, 1000, 'plan')).toEqual({ totalHits: 1, timeToExpire: 1, isBlocked: false, timeToBlockExpire: 0 });
    await clock.advance(600);
    expect((await storage.increment('a', 1000, 100, 1000, 'plan')).totalHits).toBe(2);
    await clock.advance(399);
    expect((await storage.increment('a', 1000, 100, 1000, 'plan')).totalHits).toBe(3);
    await clock.advance(1);
    expect((await storage.increment('a', 1000, 100, 1000, 'plan')).totalHits).toBe(1);
  });

  it('reports the seconds left in the window, rounded up', async () => {
    await storage.increment('a', 5000, 100, 5000, 'plan');
    await clock.advance(1200);
    expect((await storage.increment('a', 5000, 100, 5000, 'plan')).timeToExpire).toBe(4);
  });

  it('keeps keys and throttler names apart', async () => {
    await storage.increment('a', 1000, 100, 1000, 'plan');
    await storage.increment('a', 1000, 100, 1000, 'plan');
    expect((await storage.increment('b', 1000, 100, 1000, 'plan')).totalHits).toBe(1);
    expect((await storage.increment('a', 1000, 100, 1000, 'other')).totalHits).toBe(1);
  });

  it('blocks past the limit for the block duration, like the Redis script', async () => {
    for (let i = 0; i < 2; i++) expect((await storage.increment('a', 1000, 2, 3000, 'plan')).isBlocked).toBe(false);
    expect(await storage.increment('a', 1000, 2, 3000, 'plan')).toMatchObject({ totalHits: 3, isBlocked: true, timeToBlockExpire: 3 });
    await clock.advance(1500);
    expect(await storage.increment('a', 1000, 2, 3000, 'plan')).toMatchObject({ totalHits: 1, isBlocked: true, timeToBlockExpire: 2 });
    await clock.advance(1500);
    expect((await storage.increment('a', 1000, 2, 3000, 'plan')).isBlocked).toBe(false);
  });

  it('peeks at a window without counting', async () => {
    expect(await storage.peek('a', 'plan')).toBeUndefined();
    await storage.increment('a', 2000, 100, 2000, 'plan');
    expect(await storage.peek('a', 'plan')).toEqual({ hits: 1, secondsToReset: 2 });
    expect(await storage.peek('a', 'plan')).toEqual({ hits: 1, secondsToReset: 2 });
    await clock.advance(2000);
    expect(await storage.peek('a', 'plan')).toBeUndefined();
  });
});
