import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { RetentionService } from './retention.service';

/** The first run waits this long after start-up, so that a start is not slowed by a backlog. */
const FIRST_RUN_DELAY_MS = 60_000;

/**
 * Runs the retention jobs every RETENTION_INTERVAL_SECONDS on every instance (like the account events'
 * clean-up): they are safe to run at once on several (RetentionService), so no leader is needed.
 */
@Injectable()
export class RetentionScheduler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(RetentionScheduler.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly retention: RetentionService,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule(Math.min(FIRST_RUN_DELAY_MS, this.config.retention.intervalSeconds * 1000));
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.retention
        .runOnce(() => this.stopped)
        .catch((error: Error) => this.logger.warn(`Retention jobs stopped this run (the next one goes on): ${error.message}`))
        .finally(() => {
          this.running = undefined;
          this.schedule(this.config.retention.intervalSeconds * 1000);
        });
    }, delayMs);
    this.timer.unref();
  }
}
