import { setTimeout as sleep } from 'node:timers/promises';
import { ConcurrencyLimit } from './concurrency-limit';

describe('ConcurrencyLimit', () => {
  it('never runs more than max tasks at once, and runs them all', async () => {
    const limit = new ConcurrencyLimit(3);
    let running = 0;
    let peak = 0;
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        limit.run(async () => {
          running += 1;
          peak = Math.max(peak, running);
          await sleep(i % 3);
          running -= 1;
          return i;
        }),
      ),
    );
    expect(results).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(peak).toBe(3);
    expect(limit.running).toBe(0);
  });

  it('frees the slot of a task that throws', async () => {
    const limit = new ConcurrencyLimit(1);
    await expect(limit.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(limit.run(async () => 'next')).resolves.toBe('next');
  });

  it('refuses a bound that is not a positive integer', () => {
    expect(() => new ConcurrencyLimit(0)).toThrow();
  });
});
