/** Longest wait a 429's Retry-After can impose on us (a wrong header must not stop lookups for hours). */
const MAX_RATE_LIMIT_WAIT_MS = 60_000;

/**
 * How long to send nothing after a 429: its Retry-After in seconds or as an HTTP date (relative to
 * `nowMs`), at most 60 s; 1 s when the header is missing, zero, in the past or unreadable.
 */
export function rateLimitWaitMs(retryAfter: string | undefined, nowMs: number): number {
  const text = retryAfter?.trim() ?? '';
  const seconds = /^\d+$/.test(text) ? Number(text) : text === '' ? NaN : (Date.parse(text) - nowMs) / 1000;
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds * 1000, MAX_RATE_LIMIT_WAIT_MS) : 1000;
}
