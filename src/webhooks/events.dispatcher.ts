import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { SettingsService } from '../settings/settings.service';
import { CallbackClient } from './callback.client';
import { AccountEvent, EventsRepository } from './events.repository';
import { eventBody } from './events.service';

const BATCH = 20;
/** Expired events are deleted about once an hour by whichever instance gets there. */
const CLEANUP_EVERY_MS = 3600_000;

/**
 * Delivers pending account events to the account's webhook_url on every instance: signed and with the
 * address rule of bulk callbacks (CallbackClient), retried BULK_WEBHOOK_RETRIES times with a doubling
 * delay from BULK_WEBHOOK_RETRY_DELAY_SECONDS, then `failed`. The URL is read when an event is due,
 * so a URL set after the event still receives it; with none, the event is `no_webhook`.
 */
@Injectable()
export class EventsDispatcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(EventsDispatcher.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private lastCleanup = 0;

  constructor(
    private readonly events: EventsRepository,
    private readonly settings: SettingsService,
    private readonly callbacks: CallbackClient,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Delivers what is due now (also what the timer runs). */
  async deliverDue(): Promise<void> {
    const { timeoutMs } = this.config.bulk.webhook;
    for (;;) {
      const due = await this.events.claimDue(BATCH, Math.ceil((2 * timeoutMs) / 1000) + 5);
      await Promise.all(due.map((event) => this.deliver(event)));
      if (due.length < BATCH || this.stopped) break;
    }
    if (Date.now() - this.lastCleanup > CLEANUP_EVERY_MS) {
      this.lastCleanup = Date.now();
      await this.events.deleteExpired();
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.deliverDue()
        .catch((error: Error) => this.logger.warn(`Account events not delivered this round: ${error.message}`))
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.config.events.pollIntervalMs);
  }

  private async deliver(event: AccountEvent): Promise<void> {
    const { retries, retryDelaySeconds } = this.config.bulk.webhook;
    try {
      const url = await this.settings.webhookUrl(event.accountId);
      if (!url) return await this.events.markNoWebhook(event.id);
      await this.callbacks.post(url, eventBody(event), await this.settings.webhookSecrets(event.accountId));
      await this.events.markDelivered(event.id);
    } catch (error) {
      const retryIn = event.attempts > retries ? null : retryDelaySeconds * 2 ** (event.attempts - 1) * (1 + Math.random() / 4);
      await this.events.markAttemptFailed(event.id, (error as Error).message, retryIn);
      if (retryIn === null) this.logger.warn(`Account event ${event.id} (${event.type}) given up after ${event.attempts} attempts: ${(error as Error).message}`);
    }
  }
}
