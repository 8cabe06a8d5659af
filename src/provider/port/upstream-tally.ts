import type { UpstreamFailureKind } from './upstream-failure';

/**
 * Running totals for /metrics (read at scrape time): what the upstream says it charged, and its
 * failures, by endpoint path. Plain numbers so that moving them to another metrics design is a copy.
 */
export class UpstreamTally {
  private readonly costs = new Map<string, number>();
  private readonly failures = new Map<string, { path: string; kind: UpstreamFailureKind; count: number }>();

  addCost(path: string, cost: string): void {
    const amount = Number(cost);
    if (Number.isFinite(amount) && amount > 0) this.costs.set(path, (this.costs.get(path) ?? 0) + amount);
  }

  addFailure(path: string, kind: UpstreamFailureKind): void {
    const key = `${path} ${kind}`;
    const entry = this.failures.get(key);
    if (entry) entry.count += 1;
    else this.failures.set(key, { path, kind, count: 1 });
  }

  costByPath(): ReadonlyMap<string, number> {
    return this.costs;
  }

  failureCounts(): Array<{ path: string; kind: UpstreamFailureKind; count: number }> {
    return [...this.failures.values()].map((entry) => ({ ...entry }));
  }
}
