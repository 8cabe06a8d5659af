import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { Counter, Gauge } from 'prom-client';
import { DataSource } from 'typeorm';
import { HlrLookupsAdapter } from '../provider/adapters/hlr-lookups.adapter';
import { registerUpstreamTallyMetrics } from '../provider/adapters/hlr-lookups.metrics';
import { LookupProvider } from '../provider/lookup-provider';
import { LookupService } from '../provider/lookup.service';
import { Metrics } from './metrics';

const CIRCUIT_STATES = ['closed', 'open', 'half-open', 'isolated'] as const;
const BULK_JOB_STATES = ['queued', 'processing', 'completed'] as const;
const UNDEFINED_TABLE = '42P01';

/**
 * Metrics read when Prometheus scrapes, from the state that already exists: LookupService's plain
 * counters, the hlr-lookups circuit breaker and its upstream tally (cost, failures), and the
 * bulk_jobs table. Nothing on the request path.
 */
@Injectable()
export class ScrapeCollectors implements OnModuleInit {
  private readonly logger = new Logger('Metrics');

  constructor(
    private readonly metrics: Metrics,
    private readonly lookups: LookupService,
    private readonly provider: LookupProvider,
    @InjectDataSource() private readonly db: DataSource,
  ) {}

  onModuleInit(): void {
    const registers = [this.metrics.registry];
    const lookups = this.lookups;
    const provider = this.provider;
    const countBulkJobs = () => this.countBulkJobs();

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
    if (provider instanceof HlrLookupsAdapter) {
      new Gauge({
        name: 'phone_filter_upstream_circuit_state',
        help: 'Circuit breaker in front of the hlr-lookups upstream: 1 for the current state, 0 for the others.',
        labelNames: ['state'] as const,
        registers,
        collect() {
          const current = provider.circuitState;
          for (const state of CIRCUIT_STATES) this.set({ state }, state === current ? 1 : 0);
        },
      });
      registerUpstreamTallyMetrics(registers, provider.tally);
    }
    new Gauge({
      name: 'phone_filter_bulk_jobs',
      help: 'Bulk jobs in the database, by status.',
      labelNames: ['status'] as const,
      registers,
      async collect() {
        const counts = await countBulkJobs();
        this.reset();
        if (!counts) return;
        for (const state of BULK_JOB_STATES) this.set({ status: state }, 0);
        for (const [status, count] of counts) this.set({ status }, count);
      },
    });
  }

  /** Undefined when the table is missing (bulk jobs not migrated yet) or the database is unreachable. */
  private async countBulkJobs(): Promise<Map<string, number> | undefined> {
    try {
      const [{ present }]: Array<{ present: boolean }> = await this.db.query(`SELECT to_regclass('bulk_jobs') IS NOT NULL AS present`);
      if (!present) return undefined;
      const rows: Array<{ status: string; count: string }> = await this.db.query(
        `SELECT status, count(*) AS count FROM bulk_jobs GROUP BY status`,
      );
      return new Map(rows.map((row) => [row.status, Number(row.count)]));
    } catch (error) {
      const code = (error as { driverError?: { code?: string }; code?: string }).driverError?.code ?? (error as { code?: string }).code;
      if (code !== UNDEFINED_TABLE) this.logger.warn(`bulk job counts unavailable: ${(error as Error).message}`);
      return undefined;
    }
  }
}
