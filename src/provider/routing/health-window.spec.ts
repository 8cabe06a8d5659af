import { ManualClock } from '../../../test/helpers/manual-clock';
import { DemotionOptions, HealthWindow } from './health-window';

const OPTIONS: DemotionOptions = { windowMs: 10_000, windowCalls: 5, minCalls: 3, failureRate: 0.5, latencyMs: 1_000 };

describe('HealthWindow', () => {
  let clock: ManualClock;
  let window: HealthWindow;
  beforeEach(() => {
    clock = new ManualClock(1_000_000);
    window = new HealthWindow(OPTIONS, clock);
  });
  const note = (count: number, failed: boolean, latencyMs = 10) => {
    for (let i = 0; i < count; i++) window.note('a', failed, latencyMs);
  };

  it('gives no verdict on fewer outcomes than LOOKUP_DEMOTE_MIN_CALLS', () => {
    note(2, true, 5_000);
    expect(window.status('a')).toEqual({ calls: 2, failure_rate: 1, median_latency_ms: 5_000, demoted: false });
  });

  it('demotes at the failure rate, not below it', () => {
    note(2, false);
    note(1, true);
    expect(window.demoted('a')).toBe(false); // 1 of 3
    expect(window.askLast('a')).toBe(false);
    note(1, true);
    expect(window.status('a')).toMatchObject({ calls: 4, failure_rate: 0.5, demoted: true, reason: 'failures' });
  });

  it('demotes on a median duration at or above LOOKUP_DEMOTE_LATENCY_MS, though every attempt answered', () => {
    note(2, false, 1_500);
    note(1, false, 10);
    expect(window.status('a')).toEqual({ calls: 3, failure_rate: 0, median_latency_ms: 1_500, demoted: true, reason: 'latency' });
  });

  it('one slow attempt among fast ones does not demote (the median, not the worst)', () => {
    note(2, false, 10);
    note(1, false, 30_000);
    expect(window.status('a')).toMatchObject({ median_latency_ms: 10, demoted: false });
  });

  it('keeps only the last LOOKUP_DEMOTE_WINDOW_CALLS outcomes', () => {
    note(5, true);
    note(3, false);
    expect(window.status('a')).toMatchObject({ calls: 5, failure_rate: 0.4, demoted: false });
  });

  it('forgets outcomes older than LOOKUP_DEMOTE_WINDOW_MS; a demoted provider then recovers through one trial', async () => {
    note(3, true);
    expect(window.askLast('a')).toBe(true);
    await clock.advance(OPTIONS.windowMs - 1);
    expect(window.askLast('a')).toBe(true);
    await clock.advance(1);
    expect(window.status('a')).toEqual({ calls: 0, failure_rate: 0, median_latency_ms: null, demoted: true, reason: 'recovering' });
    expect(window.askLast('a')).toBe(false); // this call is the trial
    expect(window.askLast('a')).toBe(true); // the others wait for its verdict
    window.note('a', false, 10);
    expect(window.askLast('a')).toBe(false);
    expect(window.status('a')).toEqual({ calls: 1, failure_rate: 0, median_latency_ms: 10, demoted: false });
  });

  it('a failed or slow trial keeps it demoted until its outcome leaves the window; an abandoned trial is retaken after a window', async () => {
    note(3, true);
    window.askLast('a');
    await clock.advance(OPTIONS.windowMs);
    expect(window.askLast('a')).toBe(false);
    window.note('a', false, 5_000); // answered, but slowly
    expect(window.askLast('a')).toBe(true);
    await clock.advance(OPTIONS.windowMs);
    expect(window.askLast('a')).toBe(false); // the next trial, never answered
    await clock.advance(OPTIONS.windowMs - 1);
    expect(window.askLast('a')).toBe(true);
    await clock.advance(1);
    expect(window.askLast('a')).toBe(false);
  });

  it('enough good outcomes while asked last promote it without a trial', async () => {
    note(3, true);
    window.askLast('a');
    await clock.advance(OPTIONS.windowMs);
    note(3, false);
    expect(window.status('a')).toMatchObject({ calls: 3, demoted: false });
    expect(window.askLast('a')).toBe(false);
  });

  it('keeps providers apart', () => {
    note(3, true);
    expect(window.demoted('b')).toBe(false);
  });
});
