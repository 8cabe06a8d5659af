import { nextRetryInSeconds } from './backoff';

describe('the retry schedule of every callback', () => {
  const policy = { retries: 3, retryDelaySeconds: 5 };

  it.each([
    [1, 5],
    [2, 10],
    [3, 20],
  ])('waits retryDelaySeconds · 2^(n-1) after failed attempt %i (%i s, up to a quarter more)', (attempt, seconds) => {
    expect(nextRetryInSeconds(attempt, policy, () => 0)).toBe(seconds);
    expect(nextRetryInSeconds(attempt, policy, () => 1)).toBe(seconds * 1.25);
  });

  it('gives up once the retries are used', () => {
    expect(nextRetryInSeconds(4, policy, () => 0)).toBeNull();
    expect(nextRetryInSeconds(1, { retries: 0, retryDelaySeconds: 5 })).toBeNull();
  });
});
