import { Injectable } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { LookupCacheStore } from './cache/lookup-cache.store';
import { CircuitBreakerState, Lane, LANES, LookupProvider, Upstream } from './port/lookup-provider';
import { withTimeout } from '../common/timeout';
import type { RecentHealth } from './port/lookup-provider';

/**
 * One upstream's state for the router, worst first: `down` (the probe failed), `breaker_open` (a lane's
 * breaker is not closed: calls are refused without a request until its trial passes), `demoted` (a
 * lane's recent attempts failed or were slow: asked after the healthy ones), `up`.
 */
export type UpstreamState = 'down' | 'breaker_open' | 'demoted' | 'up';

export interface UpstreamHealthStatus {
  provider: string;
  state: UpstreamState;
  /** True for the sandbox: answers are not from a real network. */
  simulated: boolean;
  reachable: boolean;
  /** Why it is not reachable, when it is not. */
  detail?: string;
  /** When its reachability was last probed (ISO 8601; absent before the first probe). */
  probed_at?: string;
  /** Each lane's circuit breaker, when the upstream has them. */
  circuit?: Record<Lane, CircuitBreakerState>;
  /** With several upstreams: per lane, the router's window of recent attempts and whether it demoted this one. */
  recent?: Record<Lane, RecentHealth>;
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

  /** Probes every upstream now (the background probe's step: a request to each, up to PROVIDER_TIMEOUT_MS). */
  async check(): Promise<ProviderHealthStatus> {
    const providers = await Promise.all(this.provider.upstreams().map((upstream) => this.probe(upstream)));
    return { reachable: providers.some((entry) => entry.reachable), providers };
  }

  /**
   * What is known without asking anyone: each upstream's breakers and recent attempts as they are now,
   * and its reachability from `last`, the last probe (taken at `probedAt`). Before the first probe an
   * upstream counts as reachable unless its state says otherwise: a start is not held up by a probe.
   */
  known(last: ProviderHealthStatus | undefined, probedAt: Date | undefined): ProviderHealthStatus {
    const providers = this.provider.upstreams().map((upstream): UpstreamHealthStatus => {
      const circuit = circuitStates(upstream);
      const recent = this.recentHealth(upstream.provider);
      const probed = last?.providers.find((entry) => entry.provider === upstream.provider);
      const reachable = probed?.reachable ?? true;
      return {
        provider: upstream.provider,
        state: reachable ? stateOf(circuit, recent) : 'down',
        simulated: upstream.simulated,
        reachable,
        ...(probed?.detail ? { detail: probed.detail } : {}),
        ...(probed && probedAt ? { probed_at: probedAt.toISOString() } : {}),
        ...(circuit ? { circuit } : {}),
        ...(recent ? { recent } : {}),
      };
    });
    return { reachable: providers.some((entry) => entry.reachable), providers };
  }

  async cache(): Promise<LookupCacheHealthStatus> {
    return { store: this.store.kind, reachable: await withTimeout(this.store.ping(), 1000).catch(() => false) };
  }

  private async probe(upstream: Upstream): Promise<UpstreamHealthStatus> {
    const circuit = circuitStates(upstream);
    const recent = this.recentHealth(upstream.provider);
    const { provider, simulated } = upstream;
    const parts = { ...(circuit ? { circuit } : {}), ...(recent ? { recent } : {}) };
    try {
      await withTimeout(upstream.ping(), this.config.provider.timeoutMs);
      return { provider, state: stateOf(circuit, recent), simulated, reachable: true, ...parts };
    } catch (error) {
      return { provider, state: 'down', simulated, reachable: false, detail: error instanceof Error ? error.message : String(error), ...parts };
    }
  }

  private recentHealth(provider: string): Record<Lane, RecentHealth> | undefined {
    const lanes = LANES.map((lane) => [lane, this.provider.recentHealth(provider, lane)] as const);
    if (lanes.some(([, recent]) => recent === undefined)) return undefined;
    return Object.fromEntries(lanes) as Record<Lane, RecentHealth>;
  }
}

function stateOf(circuit: Record<Lane, CircuitBreakerState> | undefined, recent: Record<Lane, RecentHealth> | undefined): UpstreamState {
  if (circuit && LANES.some((lane) => circuit[lane] !== 'closed')) return 'breaker_open';
  if (recent && LANES.some((lane) => recent[lane].demoted)) return 'demoted';
  return 'up';
}

function circuitStates(upstream: Upstream): Record<Lane, CircuitBreakerState> | undefined {
  const states = LANES.map((lane) => [lane, upstream.circuitState(lane)] as const);
  if (states.some(([, state]) => state === undefined)) return undefined;
  return Object.fromEntries(states) as Record<Lane, CircuitBreakerState>;
}
