import { Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { Metrics } from '../metrics/metrics';
import { BulkJobsRepository } from './bulk-jobs.repository';
import { BULK_STATUSES } from './dto/bulk.dto';

const UNDEFINED_TABLE = '42P01';

/** Bulk jobs by status, counted in the database when Prometheus scrapes. */
@Injectable()
export class BulkMetrics implements OnModuleInit {
  private readonly logger = new Logger('Metrics');

  constructor(
    private readonly jobs: BulkJobsRepository,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  onModuleInit(): void {
    if (!this.metrics) return;
    const countJobs = () => this.countJobs();
    new Gauge({
      name: 'phone_filter_bulk_jobs',
      help: 'Bulk jobs in the database, by status.',
      labelNames: ['status'] as const,
      registers: [this.metrics.registry],
      async collect() {
        const counts = await countJobs();
        this.reset();
        if (!counts) return;
        for (const state of BULK_STATUSES) this.set({ status: state }, 0);
        for (const [status, count] of counts) this.set({ status }, count);
      },
    });
  }

  /** Undefined when the table is missing (bulk jobs not migrated yet) or the database is unreachable. */
  private async countJobs(): Promise<Map<string, number> | undefined> {
    try {
      return await this.jobs.countByStatus();
    } catch (error) {
      const code = (error as { driverError?: { code?: string }; code?: string }).driverError?.code ?? (error as { code?: string }).code;
      if (code !== UNDEFINED_TABLE) this.logger.warn(`bulk job counts unavailable: ${(error as Error).message}`);
      return undefined;
    }
  }
}
