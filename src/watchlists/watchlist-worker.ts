import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { RoundsRepository } from './rounds.repository';
import { RoundRunner } from './round-runner';

/** Rounds one instance runs at once (they share WATCHLIST_CONCURRENCY lookups). */
const PARALLEL_ROUNDS = 2;

/**
 * Each instance polls the due-time table (watchlists) for rounds to start or resume, every
 * WATCHLIST_POLL_INTERVAL_MS and when woken (their callbacks are delivered by webhooks/). Leases
 * taken with SKIP LOCKED share the work between instances; none is held across a restart for longer
 * than WATCHLIST_LEASE_SECONDS.
 */
@Injectable()
export class WatchlistWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(WatchlistWorker.name);
  private readonly watchlistConfig: AppConfig['watchlists'];
  private timer: NodeJS.Timeout | undefined;
  private running = new Set<Promise<void>>();
  private polling: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly rounds: RoundsRepository,
    private readonly runner: RoundRunner,
    config: AppConfig,
  ) {
    this.watchlistConfig = config.watchlists;
  }

  onApplicationBootstrap(): void {
    if (!this.watchlistConfig.worker) return;
    this.timer = setInterval(() => this.wake(), this.watchlistConfig.pollIntervalMs);
    this.timer.unref();
    this.wake();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.runner.stop();
    await this.polling;
    await Promise.allSettled([...this.running]);
  }

  /** Looks for work now rather than at the next poll (a round was just started here). */
  wake(): void {
    if (this.stopped || this.polling || !this.watchlistConfig.worker) return;
    this.polling = this.poll()
      .catch((error: Error) => this.logger.warn(`Watchlist poll failed: ${error.message}`))
      .finally(() => (this.polling = undefined));
  }

  private async poll(): Promise<void> {
    while (!this.stopped && this.running.size < PARALLEL_ROUNDS) {
      const claimed = await this.rounds.claimDue(this.watchlistConfig.scheduleGroup, this.watchlistConfig.leaseSeconds);
      if (!claimed) break;
      const work: Promise<void> = this.runner
        .run(claimed)
        .catch((error: Error) => this.logger.error(`Watchlist ${claimed.id} round stopped, resumed after its lease: ${error.message}`))
        .finally(() => {
          this.running.delete(work);
          this.wake();
        });
      this.running.add(work);
    }
  }
}
