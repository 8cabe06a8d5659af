import type { Registry } from 'prom-client';
import { NetworkStatusAnswer, NumberTypeAnswer, PortabilityAnswer } from './lookup.types';

export const CIRCUIT_STATES = ['closed', 'open', 'half-open', 'isolated'] as const;
export type CircuitBreakerState = (typeof CIRCUIT_STATES)[number];

/**
 * Who asks: live calls (/filter) or batch work (bulk jobs, watchlist rounds). Each lane has its own circuit breaker and its own
 * connections to the upstream, so a bad bulk job can neither open the breaker in front of /filter
 * nor take its sockets (bulk also has its own concurrency budget, BULK_CONCURRENCY).
 */
export const LANES = ['interactive', 'bulk'] as const;
export type Lane = (typeof LANES)[number];

/**
 * The port every lookup adapter implements (sandbox, hlr-lookups). Each method answers one check
 * for one E.164 number that is valid for its numbering plan, or throws ProviderUnavailableError
 * (network down, timeout, upstream error, circuit open). Adapters do no caching: LookupService does.
 */
export abstract class LookupProvider {
  /** 'sandbox' | 'hlr-lookups' */
  abstract readonly name: string;
  /** True when answers are simulated (sandbox): said at start-up and on /health/ready. */
  abstract readonly simulated: boolean;
  abstract networkStatus(e164: string, lane?: Lane): Promise<NetworkStatusAnswer>;
  abstract numberType(e164: string, lane?: Lane): Promise<NumberTypeAnswer>;
  abstract portability(e164: string, lane?: Lane): Promise<PortabilityAnswer>;
  /** A cheap reachability probe for /health/ready. */
  abstract ping(): Promise<void>;
  /** The state of a lane's circuit breaker (interactive by default); undefined when the adapter has none (sandbox). */
  circuitState(_lane: Lane = 'interactive'): CircuitBreakerState | undefined {
    return undefined;
  }
  /** Puts the adapter's own scrape-time instruments (e.g. the upstream's cost) on the app's registry; none by default. */
  registerMetrics(_registers: Registry[]): void {}
}

/** Any failure to get an answer from the upstream. Turned into 503 PROVIDER_UNAVAILABLE (and a refund). */
export class ProviderUnavailableError extends Error {
  constructor(
    message: string,
    readonly reason: 'timeout' | 'network' | 'upstream_error' | 'circuit_open' | 'unauthorized',
  ) {
    super(message);
    this.name = 'ProviderUnavailableError';
  }
}
