import { CircuitState, SamplingBreaker } from 'cockatiel';
import { ManualClock } from '../../../test/helpers/manual-clock';
import { TimeWindowBreaker } from './time-window-breaker';

const OPTIONS = { failureRate: 0.5, windowMs: 30_000, minCalls: 20 };

/** Feeds outcomes at `at` ms; true for a success. Returns whether the last failure opened the circuit. */
function feed(breaker: { success(state: CircuitState): void; failure(state: CircuitState): boolean }, outcomes: boolean[]): boolean {
  let opened = false;
  for (const success of outcomes) {
    if (success) breaker.success(CircuitState.Closed);
    else opened = breaker.failure(CircuitState.Closed);
  }
  return opened;
}

describe('TimeWindowBreaker', () => {
  let clock: ManualClock;
  beforeEach(() => {
    clock = new ManualClock(1_000_000);
  });

  it('forgets everything older than the window, however long nothing was called (the chaos run: 19 calls, 30 s idle, one failure)', async () => {
    const breaker = new TimeWindowBreaker(OPTIONS, clock);
    expect(feed(breaker, [...Array(10).fill(false), ...Array(9).fill(true)])).toBe(false);
    await clock.advance(31_000);
    expect(breaker.failure(CircuitState.Closed)).toBe(false);
    expect(breaker.totals()).toEqual({ failures: 1, calls: 1 });
  });

  it('cockatiel SamplingBreaker, for comparison, still counts the calls before the gap and opens', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    try {
      const sampling = new SamplingBreaker({ threshold: 0.5, duration: 30_000, minimumRps: 20 / 30 });
      feed(sampling, [...Array(10).fill(false), ...Array(9).fill(true)]);
      jest.setSystemTime(1_000_000 + 31_000);
      expect(sampling.failure(CircuitState.Closed)).toBe(true);
    } finally {
      jest.useRealTimers();
    }
  });

  it('opens once the window holds the minimum of calls and more than the failure rate of them failed', () => {
    const breaker = new TimeWindowBreaker(OPTIONS, clock);
    expect(feed(breaker, [...Array(9).fill(true), ...Array(10).fill(false)])).toBe(false); // 19 calls: below the minimum
    expect(breaker.failure(CircuitState.Closed)).toBe(true); // 11 of 20
  });

  it('does not open at exactly the failure rate', () => {
    const breaker = new TimeWindowBreaker(OPTIONS, clock);
    expect(feed(breaker, [...Array(10).fill(true), ...Array(10).fill(false)])).toBe(false);
  });

  it('lets calls leave the window one bucket at a time as time passes', async () => {
    const breaker = new TimeWindowBreaker(OPTIONS, clock);
    feed(breaker, Array(10).fill(false));
    await clock.advance(15_000);
    feed(breaker, Array(10).fill(true));
    expect(breaker.totals()).toEqual({ failures: 10, calls: 20 });
    await clock.advance(15_001); // the first ten are older than 30 s now
    expect(breaker.totals()).toEqual({ failures: 0, calls: 10 });
  });

  it('starts afresh after a successful half-open trial', () => {
    const breaker = new TimeWindowBreaker(OPTIONS, clock);
    feed(breaker, Array(25).fill(false));
    breaker.success(CircuitState.HalfOpen);
    expect(breaker.totals()).toEqual({ failures: 0, calls: 1 });
  });

  it('a failed half-open trial opens the circuit again', () => {
    const breaker = new TimeWindowBreaker(OPTIONS, clock);
    expect(breaker.failure(CircuitState.HalfOpen)).toBe(true);
  });

  it('round-trips its state (cockatiel serialises breakers through it)', () => {
    const breaker = new TimeWindowBreaker(OPTIONS, clock);
    feed(breaker, [false, true, false]);
    const copy = new TimeWindowBreaker(OPTIONS, clock);
    copy.state = breaker.state;
    expect(copy.totals()).toEqual({ failures: 2, calls: 3 });
  });
});
