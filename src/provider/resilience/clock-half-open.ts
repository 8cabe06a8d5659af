import type { IBackoff, IBackoffFactory, IHalfOpenAfterBackoffContext } from 'cockatiel';
import type { Clock } from '../../common/clock';

/**
 * cockatiel's breaker lets its half-open trial through once `Date.now() - openedAt` reaches the
 * backoff's `duration`, with its own Date.now() and no way to give it a clock. This backoff answers,
 * each time the breaker asks, a duration that makes that comparison say what the Clock says: still
 * open (Infinity) until `halfOpenMs` of the Clock have passed since the circuit opened, then due
 * (-Infinity). So the trial is due by the Clock, like every other rule about time (a test moves it).
 */
export class ClockHalfOpenAfter implements IBackoffFactory<IHalfOpenAfterBackoffContext> {
  constructor(
    private readonly clock: Clock,
    private readonly halfOpenMs: number,
  ) {}

  /** The breaker calls this as it opens (and again when a trial fails): the period starts now. */
  next(): IBackoff<IHalfOpenAfterBackoffContext> {
    const { clock, halfOpenMs } = this;
    const openedAt = clock.now();
    return {
      get duration() {
        return clock.now() - openedAt < halfOpenMs ? Infinity : -Infinity;
      },
      next: () => this.next(),
    };
  }
}
