import { Logger, OnModuleDestroy } from '@nestjs/common';
import type { CheckAnswer, FieldValue } from '../../checks/check-definition';
import { answeredNow, CircuitBreakerState, Lane, LookupProvider, Upstream } from '../port/lookup-provider';
import { ResilientUpstream } from '../resilience/resilient-upstream';
import { ProviderAttempts } from '../port/provider-attempts';
import { UpstreamTally } from '../port/upstream-tally';

/**
 * What every adapter of a real HTTP upstream shares: it is one Upstream (its provider id is its
 * ResilientUpstream's), reports that wrapper's breakers, keeps a tally for /metrics, logs a repeated
 * problem once, and closes its pools on shutdown. Subclasses hold their protocol and parsing only.
 */
export abstract class HttpUpstreamAdapter extends LookupProvider implements Upstream, OnModuleDestroy {
  readonly provider: string;
  readonly simulated = false;
  /** Upstream cost and failures, read by /metrics at scrape time. */
  readonly tally = new UpstreamTally();
  /** Every answer() by check and how it ended, read by /metrics at scrape time. */
  readonly attempts = new ProviderAttempts();
  private readonly loggedOnce = new Set<string>();

  protected constructor(
    /** The transport with its resilience, for this provider id. */
    readonly upstream: ResilientUpstream,
    private readonly logger: Logger,
  ) {
    super();
    this.provider = upstream.provider;
  }

  abstract ping(): Promise<void>;

  /** One check's fields, read from the upstream (the subclass's protocol); throws a refundable failure. */
  protected abstract recordOf(check: string, e164: string, lane: Lane): Promise<Record<string, FieldValue>>;

  /** One check's full record: its fields, this provider, now (its upstream's Clock). */
  async answer(check: string, e164: string, lane: Lane = 'interactive'): Promise<CheckAnswer> {
    return this.attempts.time(check, async () => answeredNow(check, this.provider, await this.recordOf(check, e164, lane), this.upstream.clock.date()));
  }

  upstreams(): readonly Upstream[] {
    return [this];
  }

  circuitState(lane: Lane): CircuitBreakerState {
    return this.upstream.circuitState(lane);
  }

  onModuleDestroy(): void {
    this.upstream.close();
  }

  /** One log line per distinct key (a schema break by field, an unknown word), at most 100 of them. */
  protected logOnce(level: 'error' | 'warn', key: string, message: string): void {
    if (this.loggedOnce.has(key) || this.loggedOnce.size >= 100) return;
    this.loggedOnce.add(key);
    this.logger[level](message);
  }
}
