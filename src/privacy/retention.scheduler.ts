import { BeforeApplicationShutdown, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { Clock } from '../common/clock';
import { Scheduler } from '../common/scheduler';
import { AppConfig } from '../config/app-config';
import { RetentionCounts, RetentionService } from './retention.service';

/** The first run waits this long after start-up, so that a start is not slowed by a backlog. */
const FIRST_RUN_DELAY_MS = 60_000;

/**
 * Runs the retention jobs every RETENTION_INTERVAL_SECONDS on every instance (like the outbox's
 * clean-up): they are safe to run at once on several (RetentionService), so no leader is needed.
 * A job on the Scheduler; each run counts its periods back from the Clock's now.
 */
@Injectable()
export class RetentionScheduler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  static readonly JOB = 'retention';
  private stopping = false;

  constructor(
    private readonly retention: RetentionService,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
  ) {}

  onApplicationBootstrap(): void {
    const everyMs = this.config.retention.intervalSeconds * 1000;
    this.scheduler.every({ name: RetentionScheduler.JOB, everyMs, firstAfterMs: Math.min(FIRST_RUN_DELAY_MS, everyMs) }, () => this.run());
  }

  /** A run in progress stops before its next batch (the Scheduler waits for it). */
  beforeApplicationShutdown(): void {
    this.stopping = true;
  }

  /** One run: what each job deleted or masked. */
  run(): Promise<RetentionCounts> {
    return this.retention.runOnce(this.clock.date(), () => this.stopping);
  }
}
