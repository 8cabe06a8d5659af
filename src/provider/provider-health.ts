import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { LookupCacheStore } from './lookup-cache.store';
import { CircuitBreakerState, Lane, LANES, LookupProvider, Upstream } from './lookup-provider';
import { withTimeout } from '../common/timeout';

export interface UpstreamHealthStatus {
  provider: string;
  /** True for the sandbox: answers are not from a real network. */
  simulated: boolean;
  reachable: boolean;
  /** Why it is not reachable, when it is not. */
  detail?: string;
  /** Each lane's circuit breaker, when the upstream has them. */
  circuit?: Record<Lane, CircuitBreakerState>;
}

export interface ProviderHealthStatus {
  /** Reachable when at least one upstream is: lookups can still be answered. */
  reachable: boolean;
  /** One entry per upstream, in the port's order of preference. */
  providers: UpstreamHealthStatus[];
}

export interface LookupCacheHealthStatus {
  store: 'memory' | 'redis';
  reachable: boolean;
}

/** What /health/ready reports about the lookup providers and the lookup cache. Never throws. */
@Injectable()
export class ProviderHealth {
  constructor(
    private readonly provider: LookupProvider,
    private readonly store: LookupCacheStore,
    private readonly config: AppConfig,
  ) {}

  async check(): Promise<ProviderHealthStatus> {
    const providers = await Promise.all(this.provider.upstreams().map((upstream) => this.probe(upstream)));
    return { reachable: providers.some((entry) => entry.reachable), providers };
  }

  async cache(): Promise<LookupCacheHealthStatus> {
    return { store: this.store.kind, reachable: await withTimeout(this.store.ping(), 1000).catch(() => false) };
  }

  private async probe(upstream: Upstream): Promise<UpstreamHealthStatus> {
    const circuit = circuitStates(upstream);
    const base = { provider: upstream.provider, simulated: upstream.simulated, ...(circuit ? { circuit } : {}) };
    try {
      await withTimeout(upstream.ping(), this.config.provider.timeoutMs);
      return { ...base, reachable: true };
    } catch (error) {
      return { ...base, reachable: false, detail: error instanceof Error ? error.message : String(error) };
    }
  }
}

function circuitStates(upstream: Upstream): Record<Lane, CircuitBreakerState> | undefined {
  const states = LANES.map((lane) => [lane, upstream.circuitState(lane)] as const);
  if (states.some(([, state]) => state === undefined)) return undefined;
  return Object.fromEntries(states) as Record<Lane, CircuitBreakerState>;
}
