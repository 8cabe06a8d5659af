import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { SettingsService } from '../settings/settings.service';
import { CallbackClient } from '../webhooks/callback.client';
import { WatchlistsRepository } from './watchlists.repository';
import { DueEvent, RoundsRepository } from './rounds.repository';
import { RoundRunner } from './round-runner';

/** Rounds one instance runs at once (they share WATCHLIST_CONCURRENCY lookups). */
const PARALLEL_ROUNDS = 2;
const EVENTS_PER_POLL = 20;

/**
 * Each instance polls the due-time table (watchlists) for rounds to start or resume and the outbox
 * (watchlist_events) for callbacks to send, every WATCHLIST_POLL_INTERVAL_MS and when woken. Leases
 * taken with SKIP LOCKED share the work between instances; none is held across a restart for longer
 * than WATCHLIST_LEASE_SECONDS.
 */
@Injectable()
export class WatchlistWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(WatchlistWorker.name);
  private readonly settings: AppConfig['watchlists'];
  private readonly webhook: AppConfig['bulk']['webhook'];
  private timer: NodeJS.Timeout | undefined;
  private running = new Set<Promise<void>>();
  private polling: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly rounds: RoundsRepository,
    private readonly watchlists: WatchlistsRepository,
    private readonly runner: RoundRunner,
    private readonly callbacks: CallbackClient,
    private readonly accountSettings: SettingsService,
    config: AppConfig,
  ) {
    this.settings = config.watchlists;
    this.webhook = config.bulk.webhook;
  }

  onApplicationBootstrap(): void {
    if (!this.settings.worker) return;
    this.timer = setInterval(() => this.wake(), this.settings.pollIntervalMs);
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
    if (this.stopped || this.polling || !this.settings.worker) return;
    this.polling = this.poll()
      .catch((error: Error) => this.logger.warn(`Watchlist poll failed: ${error.message}`))
      .finally(() => (this.polling = undefined));
  }

  private async poll(): Promise<void> {
    while (!this.stopped && this.running.size < PARALLEL_ROUNDS) {
      const claimed = await this.rounds.claimDue(this.settings.scheduleGroup, this.settings.leaseSeconds);
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
    if (this.stopped) return;
    const events = await this.rounds.claimDueEvents(this.settings.scheduleGroup, EVENTS_PER_POLL, Math.ceil((this.webhook.timeoutMs * 2) / 1000));
    await Promise.all(events.map((event) => this.deliver(event)));
  }

  /** One signed POST; failures are retried with exponential backoff (BULK_WEBHOOK_RETRIES, BULK_WEBHOOK_RETRY_DELAY_SECONDS). */
  private async deliver(event: DueEvent): Promise<void> {
    if (!event.callbackUrl || event.status === 'deleted') return this.rounds.eventFailed(event.id, undefined);
    try {
      const secrets = await this.accountSettings.webhookSecrets(event.accountId);
      await this.callbacks.post(event.callbackUrl, await this.payload(event), secrets);
      await this.rounds.eventDelivered(event.id);
    } catch (error) {
      const retries = event.attempts - 1;
      const delayMs = this.webhook.retryDelaySeconds * 1000 * 2 ** retries * (0.8 + Math.random() * 0.4);
      this.logger.warn(`Watchlist callback ${event.id} (attempt ${event.attempts}) failed: ${(error as Error).message}`);
      await this.rounds.eventFailed(event.id, retries < this.webhook.retries ? new Date(Date.now() + delayMs) : undefined);
    }
  }

  private async payload(event: DueEvent): Promise<object> {
    const common = { id: event.id, event: event.type, watchlist_id: event.watchlistId, round: event.round };
    if (event.type === 'watchlist.paused') {
      return {
        ...common,
        status: 'paused_insufficient_credits',
        message: 'The balance cannot cover this round: it was not run. Top up, then PATCH the watchlist with {"paused": false}.',
      };
    }
    const changes = await this.watchlists.changesOfRound(event.watchlistId, event.round);
    return {
      ...common,
      changes: changes.map((c) => ({ phone: c.phone, reference: c.reference, field: c.field, before: c.before, after: c.after, detected_at: c.detectedAt.toISOString() })),
    };
  }
}
