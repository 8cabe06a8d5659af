import { Clock, SystemClock } from '../../common/clock';
import type { DemotionOptions } from '../../config/app-config';
import type { RecentHealth } from '../port/lookup-provider';

export type { DemotionOptions };

export const DEFAULT_DEMOTION: DemotionOptions = { windowMs: 30_000, windowCalls: 20, minCalls: 10, failureRate: 0.5, latencyMs: 2_000 };

interface Outcome {
  at: number;
  failed: boolean;
  latencyMs: number;
}

/**
 * The recent attempts of each provider and lane: the last `windowCalls` outcomes within `windowMs`.
 * A demoted provider is asked only when the ones before it fail, so its outcomes age out. It stays
 * demoted ("recovering") until one trial shows it well: once its window is empty, one call asks it
 * first (the others still ask it last), and a fast answer promotes it back; a failed or slow one keeps it
 * demoted for another window. So a provider that still hangs costs one call a window, not one per
 * caller. Enough good outcomes while asked last (the others failing) promote it too. Memory:
 * `windowCalls` entries per key.
 */
export class HealthWindow {
  private readonly outcomes = new Map<string, Outcome[]>();
  /** Keys demoted and not yet promoted back, with the time their trial call started (if one is under way). */
  private readonly held = new Map<string, { trialSince?: number }>();

  constructor(
    private readonly options: DemotionOptions = DEFAULT_DEMOTION,
    /** The window's time (the injected Clock; the machine's when built outside Nest). */
    private readonly clock: Clock = new SystemClock(),
  ) {}

  /** One attempt that reached the upstream: failed for its health or not, and how long it took. */
  note(key: string, failed: boolean, latencyMs: number): void {
    const list = this.outcomes.get(key) ?? [];
    list.push({ at: this.clock.now(), failed, latencyMs });
    if (list.length > this.options.windowCalls) list.splice(0, list.length - this.options.windowCalls);
    this.outcomes.set(key, list);
    const hold = this.held.get(key);
    if (!hold) {
      if (this.verdict(key).demoted) this.held.set(key, {});
      return;
    }
    if (hold.trialSince === undefined) return;
    // The trial's verdict (or that of a call that asked it last meanwhile): well, promoted; else another window.
    if (!failed && latencyMs < this.options.latencyMs) this.held.delete(key);
    else hold.trialSince = undefined;
  }

  /** Whether this provider is demoted (for /health/ready and /metrics); routing asks `askLast`. */
  demoted(key: string): boolean {
    return this.status(key).demoted;
  }

  /**
   * Whether the call being routed asks this provider after the healthy ones. A recovering one with an
   * empty window and no trial under way makes this call its trial (false); a trial whose verdict never
   * came (the call was abandoned) is retaken after a window.
   */
  askLast(key: string): boolean {
    const window = this.verdict(key);
    if (window.demoted) {
      if (!this.held.has(key)) this.held.set(key, {});
      return true;
    }
    const hold = this.held.get(key);
    if (!hold) return false;
    if (window.calls >= this.options.minCalls) {
      this.held.delete(key); // enough good outcomes while asked last
      return false;
    }
    const now = this.clock.now();
    if (window.calls > 0 || (hold.trialSince !== undefined && now - hold.trialSince < this.options.windowMs)) return true;
    hold.trialSince = now;
    return false;
  }

  status(key: string): RecentHealth {
    const window = this.verdict(key);
    if (window.demoted || !this.held.has(key) || window.calls >= this.options.minCalls) return window;
    return { ...window, demoted: true, reason: 'recovering' };
  }

  /** What the window alone says. */
  private verdict(key: string): RecentHealth {
    const since = this.clock.now() - this.options.windowMs;
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
