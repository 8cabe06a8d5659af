/**
 * The pure rules of our rate limits: fixed windows, counted by a storage (memory or Redis), judged here,
 * so every instance and both storages answer alike.
 */

/**
 * The storages only count: we pass them a limit no window ever reaches, so their own blocking never
 * starts. A storage-side block would keep counting refused requests into the next window (Redis) and
 * outlast the window; a client that keeps retrying would never get through again.
 */
export const COUNT_ONLY = Number.MAX_SAFE_INTEGER;

export interface WindowCount {
  /** Requests counted in the current window, this one included. */
  hits: number;
  /** Seconds until the window frees, as the storage reports them (already rounded up). */
  secondsToReset: number;
}

export interface Verdict {
  limited: boolean;
  /** `RateLimit-*` headers for the response, whatever the verdict. */
  headers: Record<string, string>;
  /** Whole seconds to wait; only meaningful when limited. */
  retryAfterSeconds: number;
}

/**
 * Whole seconds until a moment `milliseconds` away, for Retry-After and RateLimit-Reset: rounded up
 * (waiting less would be refused again) and never 0 (clients read 0 as "retry at once").
 */
export function wholeSecondsUntil(milliseconds: number): number {
  if (!Number.isFinite(milliseconds)) return 1;
  return Math.max(1, Math.ceil(milliseconds / 1000));
}

/** A storage's seconds-to-reset as a header value: an integer >= 1, whatever the storage said. */
export function wholeSeconds(seconds: number): number {
  return wholeSecondsUntil(seconds * 1000);
}

export function judge(limit: number, window: WindowCount): Verdict {
  const secondsToReset = wholeSeconds(window.secondsToReset);
  return {
    limited: window.hits > limit,
    retryAfterSeconds: secondsToReset,
    headers: {
      'RateLimit-Limit': String(limit),
      'RateLimit-Remaining': String(Math.max(0, limit - window.hits)),
      'RateLimit-Reset': String(secondsToReset),
    },
  };
}

export interface PlanLimit {
  name: string;
  limit: number;
  windowSeconds: number;
}

export function planLimitMessage(plan: PlanLimit, retryAfterSeconds: number): string {
  return (
    `Rate limit of ${plan.limit} ${plural(plan.limit, 'request')} per ${plan.windowSeconds} s (plan ${plan.name}) exceeded. ` +
    `Retry after ${retryAfterSeconds} s.`
  );
}

export function failedAuthLimitMessage(limit: number, windowSeconds: number, retryAfterSeconds: number): string {
  return (
    `Too many requests without a valid API key from this address (limit ${limit} per ${windowSeconds} s). ` +
    `Retry after ${retryAfterSeconds} s.`
  );
}

function plural(count: number, noun: string): string {
  return count === 1 ? noun : `${noun}s`;
}
