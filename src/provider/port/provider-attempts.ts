import { UpstreamFailure, ProviderUnavailableError } from './upstream-failure';

/**
 * Why one attempt at one provider failed, in the bounded vocabulary of the per-provider metrics
 * (docs/operations.md "Per-provider metrics"). Never a number, never a message.
 */
export const ATTEMPT_FAILURE_REASONS = [
  'timeout',
  'connection',
  'http_5xx',
  'rate_limited',
  'rate_limit_wait',
  'unauthorized',
  'http_4xx',
  'circuit_open',
  'invalid_answer',
  'oversized',
  'no_coverage',
  'not_offered',
  'number_failed',
  'lookup_failed',
  'budget_spent',
  'other',
] as const;
export type AttemptFailureReason = (typeof ATTEMPT_FAILURE_REASONS)[number];

/** Failures decided on our side, before any request left: no latency to time, nothing the upstream may bill. */
const REFUSED_LOCALLY: ReadonlySet<AttemptFailureReason> = new Set(['circuit_open', 'rate_limit_wait', 'not_offered', 'budget_spent']);

/** The metrics' reason for a failed attempt (an UpstreamFailure's kind, else the port's reason). */
export function attemptFailureReason(error: ProviderUnavailableError): AttemptFailureReason {
  const kind = error instanceof UpstreamFailure ? error.kind : error.reason;
  switch (kind) {
    case 'timeout':
      return 'timeout';
    case 'network':
      return 'connection';
    case 'rate_limited':
    case 'http_429':
      return 'rate_limited';
    case 'unauthorized':
    case 'http_401':
    case 'http_403':
      return 'unauthorized';
    case 'rate_limit_wait':
    case 'circuit_open':
    case 'invalid_answer':
    case 'oversized':
    case 'no_coverage':
    case 'not_offered':
    case 'number_failed':
    case 'budget_spent':
      return kind;
    case 'processing_rejected':
      // hlr-lookups declines to look this number up (docs/upstream-hlr-lookups.md): it cannot answer it.
      return 'no_coverage';
    case 'processing_failed':
    case 'query_failed':
    case 'error_code':
    case 'unknown_number_type':
      return 'lookup_failed';
  }
  if (/^http_5\d\d$/.test(kind)) return 'http_5xx';
  if (/^http_4\d\d$/.test(kind)) return 'http_4xx';
  return 'other';
}

/** Whether an attempt that ended this way sent a request to the upstream (and may be billed by it). */
export function attemptReachedUpstream(reason: AttemptFailureReason | 'answered'): boolean {
  return reason === 'answered' || !REFUSED_LOCALLY.has(reason);
}

/** Told of every attempt that sent a request, with its duration (ProviderMetrics' latency histogram). */
export type AttemptListener = (check: string, outcome: 'answered' | 'failed', seconds: number) => void;

/**
 * One provider's attempts, by check: answers, failures by reason, requests sent (the configured
 * `<ID>_PRICE` is counted per request: ProviderMetrics), and a listener for their durations. Plain
 * numbers read by /metrics at scrape time; nothing here ever holds a phone number.
 */
export class ProviderAttempts {
  private readonly answered = new Map<string, number>();
  private readonly failed = new Map<string, { check: string; reason: AttemptFailureReason; count: number }>();
  private sent = 0;
  private listener?: AttemptListener;

  /** Runs one attempt and records how it ended (a failure is recorded, then thrown again). */
  async time<T>(check: string, attempt: () => Promise<T>): Promise<T> {
    const started = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - started) / 1e9;
    try {
      const result = await attempt();
      this.answered.set(check, (this.answered.get(check) ?? 0) + 1);
      this.sent += 1;
      this.listener?.(check, 'answered', seconds());
      return result;
    } catch (error) {
      if (error instanceof ProviderUnavailableError) this.fail(check, attemptFailureReason(error), seconds());
      throw error;
    }
  }

  /** ProviderMetrics' histogram: one listener (the last one set). */
  onAttempt(listener: AttemptListener): void {
    this.listener = listener;
  }

  answers(): ReadonlyMap<string, number> {
    return this.answered;
  }

  failures(): Array<{ check: string; reason: AttemptFailureReason; count: number }> {
    return [...this.failed.values()].map((entry) => ({ ...entry }));
  }

  /** Attempts that sent a request (answered, or failed after sending). */
  requests(): number {
    return this.sent;
  }

  private fail(check: string, reason: AttemptFailureReason, seconds: number): void {
    const key = `${check} ${reason}`;
    const entry = this.failed.get(key);
    if (entry) entry.count += 1;
    else this.failed.set(key, { check, reason, count: 1 });
    if (!attemptReachedUpstream(reason)) return;
    this.sent += 1;
    this.listener?.(check, 'failed', seconds);
  }
}
