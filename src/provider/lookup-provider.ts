import type { Registry } from 'prom-client';
import { NetworkStatusAnswer, NumberTypeAnswer, PortabilityAnswer } from './lookup.types';

export const CIRCUIT_STATES = ['closed', 'open', 'half-open', 'isolated'] as const;
export type CircuitBreakerState = (typeof CIRCUIT_STATES)[number];

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
  abstract networkStatus(e164: string): Promise<NetworkStatusAnswer>;
  abstract numberType(e164: string): Promise<NumberTypeAnswer>;
  abstract portability(e164: string): Promise<PortabilityAnswer>;
  /** A cheap reachability probe for /health/ready. */
  abstract ping(): Promise<void>;
  /** The state of the circuit breaker in front of the upstream; undefined when the adapter has none (sandbox). */
  get circuitState(): CircuitBreakerState | undefined {
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
