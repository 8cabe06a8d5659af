import { failedAuthLimitMessage, judge, planLimitMessage, wholeSeconds, wholeSecondsUntil } from './rate-limit-policy';

describe('rate limit policy', () => {
  it.each([
    [1, 1],
    [999, 1],
    [1000, 1],
    [1001, 2],
    [59_999, 60],
    [0, 1],
    [-5, 1],
    [Number.NaN, 1],
    [Number.POSITIVE_INFINITY, 1],
  ])('waits %p ms as %p whole seconds (rounded up, never 0)', (milliseconds, seconds) => {
    expect(wholeSecondsUntil(milliseconds)).toBe(seconds);
    expect(Number.isInteger(wholeSecondsUntil(milliseconds))).toBe(true);
  });

  it.each([
    [0, 1],
    [1, 1],
    [3, 3],
    [2.2, 3],
  ])('reports a storage reset of %p s as %p s', (seconds, expected) => {
    expect(wholeSeconds(seconds)).toBe(expected);
  });

  it.each([
    // limit, hits, limited, remaining
    [5, 1, false, '4'],
    [5, 5, false, '0'],
    [5, 6, true, '0'],
    [5, 20, true, '0'],
    [1000, 6, false, '994'],
  ])('with a limit of %p, hit number %p is limited: %p (remaining %p)', (limit, hits, limited, remaining) => {
    const verdict = judge(limit, { hits, secondsToReset: 1 });
    expect(verdict.limited).toBe(limited);
    expect(verdict.headers).toEqual({ 'RateLimit-Limit': String(limit), 'RateLimit-Remaining': remaining, 'RateLimit-Reset': '1' });
  });

  it('never tells a refused client to retry at once', () => {
    expect(judge(5, { hits: 6, secondsToReset: 0 }).retryAfterSeconds).toBe(1);
    expect(judge(5, { hits: 6, secondsToReset: 0 }).headers['RateLimit-Reset']).toBe('1');
  });

  it("names the plan's limit in the message", () => {
    expect(planLimitMessage({ name: 'free', limit: 5, windowSeconds: 1 }, 1)).toBe(
      'Rate limit of 5 requests per 1 s (plan free) exceeded. Retry after 1 s.',
    );
    expect(planLimitMessage({ name: 'tiny', limit: 1, windowSeconds: 60 }, 42)).toBe(
      'Rate limit of 1 request per 60 s (plan tiny) exceeded. Retry after 42 s.',
    );
  });

  it('says why an address without a valid key is refused', () => {
    expect(failedAuthLimitMessage(20, 1, 1)).toBe(
      'Too many requests without a valid API key from this address (limit 20 per 1 s). Retry after 1 s.',
    );
  });
});
