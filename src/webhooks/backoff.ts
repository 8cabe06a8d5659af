/**
 * The one retry schedule of every outbound delivery (account events, bulk callback_url, watchlist
 * callbacks): after failed attempt n (1-based) the next is `retryDelaySeconds · 2^(n-1)`, plus up to a
 * quarter more at random so that receivers coming back are not hit by every sender at once. After
 * `retries` retries (attempt retries + 1 failed) the delivery is given up: null.
 */
export function nextRetryInSeconds(attempt: number, policy: { retries: number; retryDelaySeconds: number }, random: () => number = Math.random): number | null {
  if (attempt > policy.retries) return null;
  return policy.retryDelaySeconds * 2 ** (attempt - 1) * (1 + random() / 4);
}
