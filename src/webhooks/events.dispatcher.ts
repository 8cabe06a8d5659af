import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Clock, daysBefore } from '../common/clock';
import { Scheduler } from '../common/scheduler';
import { AppConfig } from '../config/app-config';
import { SettingsService } from '../settings/settings.service';
import { nextRetryInSeconds } from './backoff';
import { CallbackClient, CallbackFailedError } from './callback.client';
import { AccountEvent, EVENT_RETENTION_DAYS, EventsRepository } from './events.repository';
import { eventBody } from './events.service';

const BATCH = 20;
/** Expired events are deleted about once an hour by every instance (the statement is safe to run at once on several). */
const CLEANUP_EVERY_MS = 3_600_000;

/** What one delivery round did, by outcome of the attempts it made. */
export interface DeliveryRound {
  delivered: number;
  /** Failed attempts that will be tried again. */
  retrying: number;
  /** Failed attempts that were the last (the event is `failed`). */
  gaveUp: number;
  /** Account events that found no webhook_url. */
  noWebhook: number;
}

/**
 * The one dispatcher of outbound deliveries, on every instance: account events to the account's
 * webhook_url, bulk jobs' and watchlists' callbacks to their callback_url. Signed with the account's
 * webhook secrets and with the address rule (CallbackClient), retried CALLBACK_RETRIES times on the
 * one schedule (nextRetryInSeconds, from the Clock's now), then `failed`. At least once: a delivery is
 * marked delivered after the receiver's 2xx, so a crash in between sends it again (receivers
 * deduplicate on `id`). The webhook_url is read when an event is due, so a URL set after the event
 * still receives it; with none, the event is `no_webhook`. Two jobs on the Scheduler: the delivery
 * round (`JOB`, every EVENTS_POLL_INTERVAL_MS) and the hourly clean-up of expired events (`CLEANUP_JOB`).
 */
@Injectable()
export class EventsDispatcher implements OnApplicationBootstrap, BeforeApplicationShutdown {
  static readonly JOB = 'outbox-delivery';
  static readonly CLEANUP_JOB = 'outbox-cleanup';
  private readonly logger = new Logger(EventsDispatcher.name);
  private stopping = false;

  constructor(
    private readonly events: EventsRepository,
    private readonly settings: SettingsService,
    private readonly callbacks: CallbackClient,
    private readonly config: AppConfig,
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
  ) {}

  onApplicationBootstrap(): void {
    const { deprecatedNames } = this.config.callbacks;
    if (deprecatedNames.length > 0) {
      this.logger.warn(`Deprecated configuration: ${deprecatedNames.join(', ')} still read; rename to CALLBACK_* (see docs/operations.md)`);
    }
    const everyMs = this.config.events.pollIntervalMs;
    this.scheduler.every({ name: EventsDispatcher.JOB, everyMs }, () => this.deliverDue());
    this.scheduler.every({ name: EventsDispatcher.CLEANUP_JOB, everyMs: CLEANUP_EVERY_MS, firstAfterMs: everyMs }, () => this.deleteExpired());
  }

  /** A round in progress ends after its current batch (the Scheduler waits for it). */
  beforeApplicationShutdown(): void {
    this.stopping = true;
  }

  /** One round: delivers what is due by the Clock, batch after batch until none is full. */
  async deliverDue(): Promise<DeliveryRound> {
    const round: DeliveryRound = { delivered: 0, retrying: 0, gaveUp: 0, noWebhook: 0 };
    const leaseSeconds = Math.ceil((2 * this.config.callbacks.timeoutMs) / 1000) + 5;
    for (;;) {
      const due = await this.events.claimDue(BATCH, leaseSeconds, this.clock.date());
      const outcomes = await Promise.all(due.map((event) => this.deliver(event)));
      for (const outcome of outcomes) round[outcome] += 1;
      if (due.length < BATCH || this.stopping) return round;
    }
  }

  /** One clean-up: the events older than the retention period by the Clock are deleted; resolves to how many. */
  deleteExpired(): Promise<number> {
    return this.events.deleteCreatedBefore(daysBefore(this.clock.date(), EVENT_RETENTION_DAYS));
  }

  private async deliver(event: AccountEvent): Promise<keyof DeliveryRound> {
    try {
      const url = event.callbackUrl ?? (await this.settings.webhookUrl(event.accountId));
      if (!url) {
        await this.events.markNoWebhook(event.id);
        return 'noWebhook';
      }
      const body = event.callbackUrl ? event.payload : eventBody(event);
      await this.callbacks.post(url, body, await this.settings.webhookSecrets(event.accountId));
      await this.events.markDelivered(event.id, this.clock.date());
      return 'delivered';
    } catch (error) {
      const retryIn = nextRetryInSeconds(event.attempts, this.config.callbacks);
      // The customer sees the failure's class; its detail (addresses, names of our network) goes to this log only.
      const shown = error instanceof CallbackFailedError ? error.customerMessage : 'callback not delivered';
      await this.events.markAttemptFailed(event.id, shown, retryIn === null ? null : this.clock.inMs(retryIn * 1000));
      const detail = (error as Error).message;
      if (retryIn === null) this.logger.warn(`Account event ${event.id} (${event.type}) given up after ${event.attempts} attempts: ${detail}`);
      else this.logger.warn(`Account event ${event.id} (${event.type}) attempt ${event.attempts} failed: ${detail}`);
      return retryIn === null ? 'gaveUp' : 'retrying';
    }
  }
}
