import { Injectable, OnModuleInit, Optional } from '@nestjs/common';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AppConfig } from '../../config/app-config';
import { Metrics } from '../../metrics/metrics';
import { CIRCUIT_STATES, LANES, LookupProvider } from '../port/lookup-provider';
import { ATTEMPT_FAILURE_REASONS } from '../port/provider-attempts';
import { LookupService } from '../lookup.service';

/** Attempt durations: a real upstream answers in tens of ms to seconds; the top bucket is above any PROVIDER_TIMEOUT_MS default. */
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10];

/**
 * The provider's metrics, read when Prometheus scrapes from state that already exists (LookupService's
 * plain counters, each upstream's circuit state, tally and attempts, the router's window): nothing on
 * the request path but the per-provider attempt histogram. Pushed to the app's Metrics
 * registry when there is one (a ProviderModule alone, in tests, has none).
 */
@Injectable()
export class ProviderMetrics implements OnModuleInit {
  constructor(
    private readonly lookups: LookupService,
    private readonly provider: LookupProvider,
    private readonly config: AppConfig,
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
    this.registerPerProvider(registers);
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

  /**
   * Per provider id (docs/operations.md "Per-provider metrics"): answers by check, failures by check and
   * reason, attempt durations, the configured cost of the requests sent, and whether the router has
   * demoted it. Labels are provider ids, check names and bounded reasons: never a number.
   */
  private registerPerProvider(registers: Registry[]): void {
    const upstreams = this.provider.upstreams();
    const provider = this.provider;
    const prices = new Map(this.config.provider.upstreams.map((entry) => [entry.id, entry.price]));
    new Counter({
      name: 'phone_filter_provider_answers_total',
      help: 'Checks a provider answered (one per attempt that got an answer), by provider and check.',
      labelNames: ['provider', 'check'] as const,
      registers,
      collect() {
        this.reset();
        for (const { provider: id, attempts } of upstreams) {
          for (const [check, count] of attempts?.answers() ?? []) this.inc({ provider: id, check }, count);
        }
      },
    });
    new Counter({
      name: 'phone_filter_provider_failures_total',
      help: `Failed attempts at a provider, by provider, check and reason (${ATTEMPT_FAILURE_REASONS.join(', ')}).`,
      labelNames: ['provider', 'check', 'reason'] as const,
      registers,
      collect() {
        this.reset();
        for (const { provider: id, attempts } of upstreams) {
          for (const { check, reason, count } of attempts?.failures() ?? []) this.inc({ provider: id, check, reason }, count);
        }
      },
    });
    new Counter({
      name: 'phone_filter_provider_cost_total',
      help: 'Configured upstream cost: <ID>_PRICE per attempt that sent a request to the provider (answered or failed), by provider.',
      labelNames: ['provider'] as const,
      registers,
      collect() {
        this.reset();
        for (const { provider: id, attempts } of upstreams) this.inc({ provider: id }, (prices.get(id) ?? 0) * (attempts?.requests() ?? 0));
      },
    });
    new Gauge({
      name: 'phone_filter_provider_demoted',
      help: 'Whether the router asks a provider after the healthy ones (LOOKUP_DEMOTE_*): 1 demoted, 0 not, by provider and lane; absent with one provider.',
      labelNames: ['provider', 'lane'] as const,
      registers,
      collect() {
        this.reset();
        for (const { provider: id } of upstreams) {
          for (const lane of LANES) {
            const recent = provider.recentHealth(id, lane);
            if (recent) this.set({ provider: id, lane }, recent.demoted ? 1 : 0);
          }
        }
      },
    });
    const duration = new Histogram({
      name: 'phone_filter_provider_attempt_duration_seconds',
      help: 'Time of each attempt at a provider that sent a request, by provider, check and outcome (answered, failed).',
      labelNames: ['provider', 'check', 'outcome'] as const,
      buckets: ATTEMPT_BUCKETS,
      registers,
    });
    for (const { provider: id, attempts } of upstreams) {
      // One child per check and outcome, made once: prom-client hashes a label object on every observe.
      const children = new Map<string, Histogram.Internal<'provider' | 'check' | 'outcome'>>();
      attempts?.onAttempt((check, outcome, seconds) => {
        const childKey = `${check} ${outcome}`;
        let child = children.get(childKey);
        if (!child) {
          child = duration.labels({ provider: id, check, outcome });
          children.set(childKey, child);
        }
        child.observe(seconds);
      });
    }
  }
}
