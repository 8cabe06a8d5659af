import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ScheduledJob, Scheduler } from '../common/scheduler';
import { AppConfig } from '../config/app-config';
import { RoundsRepository } from './rounds.repository';
import { RoundRunner } from './round-runner';

/** Rounds one instance runs at once (they share WATCHLIST_CONCURRENCY lookups). */
const PARALLEL_ROUNDS = 2;

/**
 * Each instance polls the due-time table (watchlists) for rounds to start or resume: the poll is a
 * job of the Scheduler, every WATCHLIST_POLL_INTERVAL_MS and at once when woken (a round was started
 * here, or one of this instance's ended). Leases taken with SKIP LOCKED share the work between
 * instances; none is held across a restart for longer than WATCHLIST_LEASE_SECONDS. The rounds a poll
 * claims run on after it (up to two at once); `idle()` resolves when they have ended. Their callbacks
 * are delivered by webhooks/.
 */
@Injectable()
export class WatchlistWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  static readonly JOB = 'watchlist-poll';
  private readonly logger = new Logger(WatchlistWorker.name);
  private readonly watchlistConfig: AppConfig['watchlists'];
  private job: ScheduledJob | undefined;
  private running = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    private readonly rounds: RoundsRepository,
    private readonly runner: RoundRunner,
    private readonly scheduler: Scheduler,
    config: AppConfig,
  ) {
    this.watchlistConfig = config.watchlists;
  }

  onApplicationBootstrap(): void {
    if (!this.watchlistConfig.worker) return;
    this.job = this.scheduler.every({ name: WatchlistWorker.JOB, everyMs: this.watchlistConfig.pollIntervalMs, firstAfterMs: 0 }, () => this.poll());
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.runner.stop();
    await this.idle();
  }

  /** Looks for work now rather than at the next poll (a round was just started here). */
  wake(): void {
    this.job?.wake();
  }

  /**
   * One poll (the job's step): claims the due rounds this instance has room for and starts them;
   * resolves to the ids of the watchlists it claimed (their rounds run on: see `idle`).
   */
  async poll(): Promise<string[]> {
    const claimedIds: string[] = [];
    while (!this.stopped && this.running.size < PARALLEL_ROUNDS) {
      const claimed = await this.rounds.claimDue(this.watchlistConfig.scheduleGroup, this.watchlistConfig.leaseSeconds);
      if (!claimed) break;
      claimedIds.push(claimed.id);
      const work: Promise<void> = this.runner
        .run(claimed)
        .catch((error: Error) => this.logger.error(`Watchlist ${claimed.id} round stopped, resumed after its lease: ${error.message}`))
        .finally(() => {
          this.running.delete(work);
          this.wake();
        });
      this.running.add(work);
    }
    return claimedIds;
  }

  /** Resolves when the rounds running on this instance now have ended (each one's outcome is logged). */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }
}
