import type { DemotionOptions } from '../config/app-config';

export type { DemotionOptions };

export const DEFAULT_DEMOTION: DemotionOptions = { windowMs: 30_000, windowCalls: 20, minCalls: 10, failureRate: 0.5, latencyMs: 2_000 };

/** What the window says about one provider on one lane (shown on /health/ready). */
export interface RecentHealth {
  /** Outcomes in the window. */
  calls: number;
  /** The share of them that failed for the upstream's health (0 when none). */
  failure_rate: number;
  /** The median duration of their attempts, in ms (null when none). */
  median_latency_ms: number | null;
  demoted: boolean;
  /** Why, when demoted. */
  reason?: 'failures' | 'latency';
}

interface Outcome {
  at: number;
  failed: boolean;
  latencyMs: number;
}

/**
 * The recent attempts of each provider and lane: the last `windowCalls` outcomes within `windowMs`.
 * A demoted provider is asked only when the ones before it fail, so its outcomes age out: once the
 * window has passed without enough of them it is promoted back and asked first again (a slow or failing
 * one is demoted again after `minCalls` more attempts). Memory: `windowCalls` entries per key.
 */
export class HealthWindow {
  private readonly outcomes = new Map<string, Outcome[]>();

  constructor(
    private readonly options: DemotionOptions = DEFAULT_DEMOTION,
    private readonly now: () => number = Date.now,
  ) {}

  /** One attempt that reached the upstream: failed for its health or not, and how long it took. */
  note(key: string, failed: boolean, latencyMs: number): void {
    const list = this.outcomes.get(key) ?? [];
    list.push({ at: this.now(), failed, latencyMs });
    if (list.length > this.options.windowCalls) list.splice(0, list.length - this.options.windowCalls);
    this.outcomes.set(key, list);
  }

  demoted(key: string): boolean {
    return this.status(key).demoted;
  }

  status(key: string): RecentHealth {
    const since = this.now() - this.options.windowMs;
    const list = (this.outcomes.get(key) ?? []).filter((outcome) => outcome.at > since);
    if (list.length === 0) return { calls: 0, failure_rate: 0, median_latency_ms: null, demoted: false };
    const failureRate = list.filter((outcome) => outcome.failed).length / list.length;
    const medianLatencyMs = median(list.map((outcome) => outcome.latencyMs));
    const base = { calls: list.length, failure_rate: round(failureRate), median_latency_ms: Math.round(medianLatencyMs) };
    if (list.length < this.options.minCalls) return { ...base, demoted: false };
    if (failureRate >= this.options.failureRate) return { ...base, demoted: true, reason: 'failures' };
    if (medianLatencyMs >= this.options.latencyMs) return { ...base, demoted: true, reason: 'latency' };
    return { ...base, demoted: false };
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}
