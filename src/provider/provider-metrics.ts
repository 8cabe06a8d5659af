import { Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { Metrics } from '../metrics/metrics';
import { CIRCUIT_STATES, LANES, LookupProvider } from './lookup-provider';
import { LookupService } from './lookup.service';

/**
 * The provider's metrics, read when Prometheus scrapes from state that already exists (LookupService's
 * plain counters, each upstream's circuit state and tally): nothing on the request path. Pushed to the app's Metrics
 * registry when there is one (a ProviderModule alone, in tests, has none).
 */
@Injectable()
export class ProviderMetrics implements OnModuleInit {
  constructor(
    private readonly lookups: LookupService,
    private readonly provider: LookupProvider,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  onModuleInit(): void {
    if (!this.metrics) return;
    const registers = [this.metrics.registry];
    const lookups = this.lookups;
    const provider = this.provider;

    new Counter({
      name: 'phone_filter_lookups_total',
      help: 'Provider lookups (cache misses that reached the adapter), by check and outcome.',
      labelNames: ['check', 'outcome'] as const,
      registers,
      collect() {
        this.reset();
        for (const [check, outcomes] of Object.entries(lookups.counters.lookups)) {
          for (const [outcome, count] of Object.entries(outcomes)) this.inc({ check, outcome }, count);
        }
      },
    });
    new Counter({
      name: 'phone_filter_lookup_cache_hits_total',
      help: 'Check answers served from the lookup cache.',
      registers,
      collect() {
        this.reset();
        this.inc(lookups.counters.cache.hits);
      },
    });
    new Counter({
      name: 'phone_filter_lookup_cache_misses_total',
      help: 'Check answers not in the lookup cache (asked from the provider).',
      registers,
      collect() {
        this.reset();
        this.inc(lookups.counters.cache.misses);
      },
    });
    const upstreams = provider.upstreams();
    new Gauge({
      name: 'phone_filter_upstream_circuit_state',
      help: 'Circuit breakers in front of each upstream, one per provider and lane (interactive, batch): 1 for the current state, 0 for the others.',
      labelNames: ['provider', 'lane', 'state'] as const,
      registers,
      collect() {
        for (const upstream of upstreams) {
          for (const lane of LANES) {
            const current = upstream.circuitState(lane);
            if (current === undefined) continue;
            for (const state of CIRCUIT_STATES) this.set({ provider: upstream.provider, lane, state }, state === current ? 1 : 0);
          }
        }
      },
    });
    new Counter({
      name: 'phone_filter_upstream_failovers_total',
      help: 'Checks moved on from a provider to the next one (LOOKUP_PROVIDERS): it failed refundably, or its breaker was open.',
      labelNames: ['provider'] as const,
      registers,
      collect() {
        this.reset();
        for (const [from, count] of provider.failovers()) this.inc({ provider: from }, count);
      },
    });
    new Counter({
      name: 'phone_filter_upstream_cost_total',
      help: 'What each upstream says it charged (its own cost field, in its account currency), by provider and endpoint path.',
      labelNames: ['provider', 'endpoint'] as const,
      registers,
      collect() {
        this.reset();
        for (const { provider, tally } of upstreams) {
          for (const [endpoint, cost] of tally?.costByPath() ?? []) this.inc({ provider, endpoint }, cost);
        }
      },
    });
    new Counter({
      name: 'phone_filter_upstream_errors_total',
      help: 'Upstream failures by provider, endpoint path and kind (http_<status>, rate_limited, invalid_answer, oversized, number_failed, processing_rejected, processing_failed, query_failed, error_code, unknown_number_type, timeout, network, circuit_open, ...).',
      labelNames: ['provider', 'endpoint', 'kind'] as const,
      registers,
      collect() {
        this.reset();
        for (const { provider, tally } of upstreams) {
          for (const { path, kind, count } of tally?.failureCounts() ?? []) this.inc({ provider, endpoint: path, kind }, count);
        }
      },
    });
  }
}
