import { CircuitState, IBreaker } from 'cockatiel';
import { Clock, SystemClock } from '../../common/clock';
import type { BreakerOptions } from '../../config/app-config';

interface Bucket {
  startedAt: number;
  failures: number;
  successes: number;
}

/** Buckets per window: a call leaves the window at most a tenth of a window early, never late. */
const BUCKETS_PER_WINDOW = 10;

/**
 * A failure-rate breaker whose window is measured in time: every verdict first drops the buckets that
 * ended more than `windowMs` ago, however long nothing was called. cockatiel's SamplingBreaker moves its
 * window one bucket per call instead, so after an idle gap the failures from before the gap still
 * count and one more failure can open the circuit (docs/upstream-hlr-lookups.md, "Circuit breaker").
 * It plugs into cockatiel's circuitBreaker() as its IBreaker.
 */
export class TimeWindowBreaker implements IBreaker {
  private buckets: Bucket[] = [];
  private readonly bucketMs: number;

  constructor(
    private readonly options: Pick<BreakerOptions, 'failureRate' | 'windowMs' | 'minCalls'>,
    /** The window's time (the injected Clock; the machine's when built outside Nest). */
    private readonly clock: Clock = new SystemClock(),
  ) {
    this.bucketMs = Math.max(1, Math.floor(options.windowMs / BUCKETS_PER_WINDOW));
  }

  get state(): unknown {
    return { buckets: this.buckets.map((bucket) => ({ ...bucket })) };
  }

  set state(value: unknown) {
    this.buckets = ((value as { buckets?: Bucket[] })?.buckets ?? []).map((bucket) => ({ ...bucket }));
  }

  success(state: CircuitState): void {
    // A successful half-open trial closes the circuit: what failed before it is history.
    if (state === CircuitState.HalfOpen) this.buckets = [];
    this.record('successes');
  }

  failure(state: CircuitState): boolean {
    this.record('failures');
    if (state !== CircuitState.Closed) return true;
    const { failures, calls } = this.totals();
    return calls >= this.options.minCalls && failures > this.options.failureRate * calls;
  }

  /** Calls and failures inside the window now (for tests and diagnostics). */
  totals(): { failures: number; calls: number } {
    this.expire(this.clock.now());
    let failures = 0;
    let calls = 0;
    for (const bucket of this.buckets) {
      failures += bucket.failures;
      calls += bucket.failures + bucket.successes;
    }
    return { failures, calls };
  }

  private record(outcome: 'failures' | 'successes'): void {
    const now = this.clock.now();
    this.expire(now);
    let current = this.buckets.at(-1);
    if (current === undefined || now - current.startedAt >= this.bucketMs) {
      current = { startedAt: now, failures: 0, successes: 0 };
      this.buckets.push(current);
    }
    current[outcome] += 1;
  }

  /** Drops every bucket that started before the window that ends now: no call older than the window counts. */
  private expire(now: number): void {
    const windowStart = now - this.options.windowMs;
    let keep = 0;
    while (keep < this.buckets.length && this.buckets[keep].startedAt <= windowStart) keep += 1;
    if (keep > 0) this.buckets.splice(0, keep);
  }
}
