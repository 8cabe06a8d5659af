import { Counter, Registry } from 'prom-client';
import { UpstreamTally } from './hlr-lookups.answers';

/**
 * The hlr-lookups adapter's own instruments, read at scrape time from its UpstreamTally: what the
 * upstream says it charged, and its failures (docs/upstream-hlr-lookups.md, "Metrics").
 */
export function registerUpstreamTallyMetrics(registers: Registry[], tally: UpstreamTally): void {
  new Counter({
    name: 'phone_filter_upstream_cost_total',
    help: 'What the hlr-lookups upstream says it charged (its `cost` field, in the account currency), by endpoint path.',
    labelNames: ['endpoint'] as const,
    registers,
    collect() {
      this.reset();
      for (const [endpoint, cost] of tally.costByPath()) this.inc({ endpoint }, cost);
    },
  });
  new Counter({
    name: 'phone_filter_upstream_errors_total',
    help: 'hlr-lookups upstream failures by endpoint path and kind (http_<status>, rate_limited, invalid_answer, processing_rejected, processing_failed, query_failed, error_code, unknown_number_type, timeout, network, ...).',
    labelNames: ['endpoint', 'kind'] as const,
    registers,
    collect() {
      this.reset();
      for (const { path, kind, count } of tally.failureCounts()) this.inc({ endpoint: path, kind }, count);
    },
  });
}
