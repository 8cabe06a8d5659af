import { Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { Counter, Gauge } from 'prom-client';
import { Metrics } from '../metrics/metrics';
import { CIRCUIT_STATES, LANES, LookupProvider } from './lookup-provider';
import { LookupService } from './lookup.service';

/**
 * The provider's metrics, read when Prometheus scrapes from state that already exists (LookupService's
 * plain counters, the port's circuit state): nothing on the request path. Pushed to the app's Metrics
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
    if (provider.circuitState() !== undefined) {
      new Gauge({
        name: 'phone_filter_upstream_circuit_state',
        help: 'Circuit breakers in front of the hlr-lookups upstream, one per lane (interactive, bulk): 1 for the current state, 0 for the others.',
        labelNames: ['lane', 'state'] as const,
        registers,
        collect() {
          for (const lane of LANES) {
            const current = provider.circuitState(lane);
            for (const state of CIRCUIT_STATES) this.set({ lane, state }, state === current ? 1 : 0);
          }
        },
      });
    }
    provider.registerMetrics(registers);
  }
}
