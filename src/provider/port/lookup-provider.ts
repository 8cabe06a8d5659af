import type { CheckAdapter, CheckAnswer, CheckOptionValues, FieldValue } from '../../checks/check-definition';
import { UpstreamFailure } from './upstream-failure';
import type { ProviderAttempts } from './provider-attempts';
import type { UpstreamTally } from './upstream-tally';

export const CIRCUIT_STATES = ['closed', 'open', 'half-open', 'isolated'] as const;
export type CircuitBreakerState = (typeof CIRCUIT_STATES)[number];

/**
 * Who asks: live calls (/filter) or batch work (bulk jobs and watchlist rounds). Each lane has its own
 * circuit breaker and its own connections to each upstream, so a bad bulk job or watchlist round can
 * neither open the breaker in front of /filter nor take its sockets (bulk and watchlists also have
 * their own concurrency budgets, BULK_CONCURRENCY and WATCHLIST_CONCURRENCY).
 */
export const LANES = ['interactive', 'batch'] as const;
export type Lane = (typeof LANES)[number];

/**
 * One upstream behind the port, as operations see it: the provider id that labels its metrics and its
 * entry on /health/ready, whether its answers are simulated, a reachability probe, the state of its
 * breakers and its running totals. The port has one of these per upstream it can ask.
 */
export interface Upstream {
  /** The provider id, e.g. 'hlr-lookups' or 'sandbox'. */
  readonly provider: string;
  /** True when answers are simulated (sandbox): said at start-up and on /health/ready. */
  readonly simulated: boolean;
  /** A cheap reachability probe for /health/ready; throws ProviderUnavailableError. */
  ping(): Promise<void>;
  /** The state of a lane's circuit breaker; undefined when there is none (sandbox). */
  circuitState(lane: Lane): CircuitBreakerState | undefined;
  /** What the upstream says it charged and its failures, for /metrics; undefined when not counted. */
  readonly tally?: UpstreamTally;
  /** Its attempts by check (answers, failures by reason, requests sent, their durations), for /metrics. */
  readonly attempts?: ProviderAttempts;
}

/**
 * The port every lookup adapter implements (sandbox, hlr-lookups, twilio-lookup, and the failover
 * router in front of several). `offers` says which checks it answers (an adapter: its descriptor's
 * list, src/config/upstream-adapters.ts; the router: any of its members'), and nobody asks it another:
 * the router skips a provider that does not offer a check, LookupService refuses a check that no
 * configured provider offers before asking anyone. `answer` answers one check (by its name,
 * src/checks/) for one E.164 number that is valid for its numbering plan with the check's full record,
 * or throws ProviderUnavailableError (network down, timeout, upstream error, circuit open). `options`
 * are the check's per-account options (its definition declares them), resolved to values. Adapters do
 * no caching: LookupService does.
 */
export abstract class LookupProvider implements CheckAdapter {
  abstract answer(check: string, e164: string, lane?: Lane, options?: CheckOptionValues): Promise<CheckAnswer>;
  /** Whether it answers this check (never asked one it does not). */
  abstract offers(check: string): boolean;
  /** Every upstream this port may ask, in its order of preference. */
  abstract upstreams(): readonly Upstream[];
  /** Checks moved on from each provider id to the next (failover); none for a single upstream. */
  failovers(): ReadonlyMap<string, number> {
    return new Map();
  }
  /** What the router's window of recent attempts says about a provider on a lane; undefined without a router (one upstream). */
  recentHealth(_provider: string, _lane: Lane): RecentHealth | undefined {
    return undefined;
  }
}

/** A check's full record as `provider` answered it at `now` (the Clock's time of the answer). */
export function answeredNow(check: string, provider: string, fields: Readonly<Record<string, FieldValue>>, now: Date): CheckAnswer {
  return { check, fields, provider, observedAt: now.toISOString() };
}

/**
 * The refusal of a check that `who` does not offer: refundable, decided without a request (no outcome
 * for the provider's health, no failover counted). Routing never asks for one; this is what a caller
 * gets when no configured provider offers the check (settings refuse to turn such a check on).
 */
export function notOffered(who: string, check: string): UpstreamFailure {
  return new UpstreamFailure(`${who} offers no check "${check}"`, 'upstream_error', 'not_offered');
}

/** What the window says about one provider on one lane (shown on /health/ready). */
export interface RecentHealth {
  /** Outcomes in the window. */
  calls: number;
  /** The share of them that failed for the upstream's health (0 when none). */
  failure_rate: number;
  /** The median duration of their attempts, in ms (null when none). */
  median_latency_ms: number | null;
  demoted: boolean;
  /** Why, when demoted: its recent failures, its latency, or it was demoted and waits for a good trial. */
  reason?: 'failures' | 'latency' | 'recovering';
}
