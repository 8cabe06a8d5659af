import { SingleFlight } from './single-flight';

describe('SingleFlight', () => {
  it('runs concurrent calls with one key once and shares the result', async () => {
    const flights = new SingleFlight();
    let runs = 0;
    const work = async () => {
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 10));
      return runs;
    };
    const calls = Array.from({ length: 5 }, () => flights.run('k', work));
    expect(calls.map((call) => call.shared)).toEqual([false, true, true, true, true]);
    expect(await Promise.all(calls.map((call) => call.promise))).toEqual([1, 1, 1, 1, 1]);
    expect(flights.size).toBe(0);
  });

  it('keeps different keys apart and forgets a failure once it settles', async () => {
    const flights = new SingleFlight();
    const failing = flights.run('a', () => Promise.reject(new Error('boom')));
    const other = flights.run('b', async () => 'b');
    await expect(failing.promise).rejects.toThrow('boom');
    await expect(other.promise).resolves.toBe('b');
    await expect(flights.run('a', async () => 'again').promise).resolves.toBe('again');
  });
});
