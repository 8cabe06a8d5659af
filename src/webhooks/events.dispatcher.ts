import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { SettingsService } from '../settings/settings.service';
import { nextRetryInSeconds } from './backoff';
import { CallbackClient, CallbackFailedError } from './callback.client';
import { AccountEvent, EventsRepository } from './events.repository';
import { eventBody } from './events.service';

const BATCH = 20;
/** Expired events are deleted about once an hour by whichever instance gets there. */
const CLEANUP_EVERY_MS = 3600_000;

/**
 * The one dispatcher of outbound deliveries, on every instance: account events to the account's
 * webhook_url, bulk jobs' and watchlists' callbacks to their callback_url. Signed with the account's
 * webhook secrets and with the address rule (CallbackClient), retried CALLBACK_RETRIES times on the
 * one schedule (nextRetryInSeconds), then `failed`. At least once: a delivery is marked delivered
 * after the receiver's 2xx, so a crash in between sends it again (receivers deduplicate on `id`).
 * The webhook_url is read when an event is due, so a URL set after the event still receives it;
 * with none, the event is `no_webhook`.
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
    const { deprecatedNames } = this.config.callbacks;
    if (deprecatedNames.length > 0) {
      this.logger.warn(`Deprecated configuration: ${deprecatedNames.join(', ')} still read; rename to CALLBACK_* (see docs/operations.md)`);
    }
    this.schedule();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** Delivers what is due now (also what the timer runs). */
  async deliverDue(): Promise<void> {
    const { timeoutMs } = this.config.callbacks;
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
    try {
      const url = event.callbackUrl ?? (await this.settings.webhookUrl(event.accountId));
      if (!url) return await this.events.markNoWebhook(event.id);
      const body = event.callbackUrl ? event.payload : eventBody(event);
      await this.callbacks.post(url, body, await this.settings.webhookSecrets(event.accountId));
      await this.events.markDelivered(event.id);
    } catch (error) {
      const retryIn = nextRetryInSeconds(event.attempts, this.config.callbacks);
      // The customer sees the failure's class; its detail (addresses, names of our network) goes to this log only.
      const shown = error instanceof CallbackFailedError ? error.customerMessage : 'callback not delivered';
      await this.events.markAttemptFailed(event.id, shown, retryIn);
      const detail = (error as Error).message;
      if (retryIn === null) this.logger.warn(`Account event ${event.id} (${event.type}) given up after ${event.attempts} attempts: ${detail}`);
      else this.logger.warn(`Account event ${event.id} (${event.type}) attempt ${event.attempts} failed: ${detail}`);
    }
  }
}
