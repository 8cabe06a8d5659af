import { Injectable, Optional } from '@nestjs/common';
import { type Caller, type CallerAbsence, CallerNotServed } from '../common/caller';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics';

/** Retry-After of a call shed for its wait: long enough for a queue to drain, short for a client's retry. */
export const SHED_RETRY_AFTER_SECONDS = 2;

/**
 * The last question before a charge statement (issue 35 point 1): is its caller still there, and has
 * it not waited past CALL_QUEUE_DEADLINE_MS since its request arrived (by the Clock)? A call that
 * fails either is not charged, not looked up, and counted in phone_filter_calls_not_charged_total.
 * A call with no caller (a worker's, a test's) always passes.
 */
@Injectable()
export class CallerGate {
  private readonly deadlineMs: number;

  constructor(
    private readonly clock: Clock,
    config: AppConfig,
    @Optional() private readonly metrics?: Metrics,
  ) {
    this.deadlineMs = config.http.callQueueDeadlineMs;
  }

  /** Why the call must not be charged now, or null. */
  absence(caller: Caller | undefined): CallerAbsence | null {
    if (!caller) return null;
    if (caller.gone()) return 'client_gone';
    if (this.clock.now() - caller.arrivedAt > this.deadlineMs) return 'queue_deadline';
    return null;
  }

  /** Throws (and counts) CallerNotServed when the call must not be charged (503; with Retry-After past the deadline). */
  admit(caller: Caller | undefined): void {
    const absence = this.absence(caller);
    if (absence) throw this.refusal(absence);
  }

  /**
   * The error a call absent for `absence` is failed with, counted once. `refunded`: the call was charged
   * already and its charge given back (its client left while it was worked: CreditsService.settle).
   */
  refusal(absence: CallerAbsence, refunded = false): CallerNotServed {
    this.metrics?.callNotCharged(absence);
    if (absence === 'client_gone' && refunded) {
      return new CallerNotServed(absence, 'The client closed the connection before its answer was sent: its charge is refunded.', {}, true);
    }
    if (absence === 'client_gone') return new CallerNotServed(absence, 'The client closed the connection before the call was charged. Nothing was charged.');
    return new CallerNotServed(
      absence,
      `The service is overloaded: this call waited more than ${this.deadlineMs / 1000} s before it could be worked. ` +
        `Nothing was charged; retry after ${SHED_RETRY_AFTER_SECONDS} s (Retry-After).`,
      { 'Retry-After': String(SHED_RETRY_AFTER_SECONDS) },
    );
  }
}
