import { attemptFailureReason, attemptReachedUpstream, ProviderAttempts } from './provider-attempts';
import { UpstreamConnectionError, UpstreamFailure, UpstreamFailureKind, ProviderUnavailableError } from './upstream-failure';

describe('attemptFailureReason', () => {
  it.each([
    ['network', 'connection'],
    ['timeout', 'timeout'],
    ['http_500', 'http_5xx'],
    ['http_503', 'http_5xx'],
    ['http_429', 'rate_limited'],
    ['rate_limited', 'rate_limited'],
    ['rate_limit_wait', 'rate_limit_wait'],
    ['http_401', 'unauthorized'],
    ['http_404', 'http_4xx'],
    ['circuit_open', 'circuit_open'],
    ['invalid_answer', 'invalid_answer'],
    ['oversized', 'oversized'],
    ['no_coverage', 'no_coverage'],
    ['not_offered', 'not_offered'],
    ['number_failed', 'number_failed'],
    ['query_failed', 'lookup_failed'],
    ['processing_failed', 'lookup_failed'],
    ['processing_rejected', 'no_coverage'],
    ['budget_spent', 'budget_spent'],
  ] as const)('an UpstreamFailure of kind %s is %s', (kind, reason) => {
    expect(attemptFailureReason(new UpstreamFailure('x', 'upstream_error', kind as UpstreamFailureKind))).toBe(reason);
  });

  it.each([
    ['timeout', 'timeout'],
    ['network', 'connection'],
    ['unauthorized', 'unauthorized'],
    ['circuit_open', 'circuit_open'],
    ['upstream_error', 'other'],
  ] as const)('a bare ProviderUnavailableError of reason %s is %s', (given, reason) => {
    expect(attemptFailureReason(new ProviderUnavailableError('x', given))).toBe(reason);
  });

  it('a connection error is a connection failure', () => {
    expect(attemptFailureReason(new UpstreamConnectionError('ECONNREFUSED'))).toBe('connection');
  });

  it('refusals decided here sent no request; the rest did', () => {
    expect(['circuit_open', 'rate_limit_wait', 'not_offered', 'budget_spent'].map((reason) => attemptReachedUpstream(reason as never))).toEqual([false, false, false, false]);
    expect(['answered', 'timeout', 'connection', 'http_5xx', 'invalid_answer', 'rate_limited'].map((reason) => attemptReachedUpstream(reason as never))).toEqual([true, true, true, true, true, true]);
  });
});

describe('ProviderAttempts', () => {
  it('counts answers and failures by check and reason, requests only for attempts that were sent, and times those', async () => {
    const attempts = new ProviderAttempts();
    const timed: string[] = [];
    attempts.onAttempt((check, outcome, seconds) => timed.push(`${check} ${outcome} ${seconds >= 0}`));
    await attempts.time('network_status', async () => 'ok');
    await attempts.time('network_status', async () => 'ok');
    await expect(attempts.time('line_type', () => Promise.reject(new UpstreamFailure('x', 'upstream_error', 'http_502')))).rejects.toThrow('x');
    await expect(attempts.time('line_type', () => Promise.reject(new UpstreamFailure('open', 'circuit_open', 'circuit_open')))).rejects.toThrow('open');
    await expect(attempts.time('line_type', () => Promise.reject(new Error('a bug')))).rejects.toThrow('a bug');
    expect([...attempts.answers()]).toEqual([['network_status', 2]]);
    expect(attempts.failures()).toEqual([
      { check: 'line_type', reason: 'http_5xx', count: 1 },
      { check: 'line_type', reason: 'circuit_open', count: 1 },
    ]);
    expect(attempts.requests()).toBe(3);
    expect(timed).toEqual(['network_status answered true', 'network_status answered true', 'line_type failed true']);
  });
});
