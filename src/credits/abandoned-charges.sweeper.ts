import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { AppConfig } from '../config/app-config';
import { CreditsService } from './credits.service';

/**
 * No credit is lost on a crash: a charge whose call never answered (settled neither by an answer
 * nor by a refund) is refunded once it is older than UNSETTLED_CHARGE_REFUND_AFTER_SECONDS, at
 * start-up and then periodically. Every instance sweeps; the refund is exactly-once in the database.
 */
@Injectable()
export class AbandonedChargesSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(AbandonedChargesSweeper.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly credits: CreditsService,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.sweep();
    const bound = this.config.unsettledChargeRefundAfterSeconds;
    const everyMs = Math.min(30_000, Math.max(1000, (bound * 1000) / 4));
    this.timer = setInterval(() => void this.sweep(), everyMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  sweep(): Promise<unknown> {
    this.running ??= this.credits
      .refundAbandonedCharges(this.config.unsettledChargeRefundAfterSeconds)
      .catch((error: Error) => this.logger.warn(`Sweep of unanswered charges failed: ${error.message}`))
      .finally(() => (this.running = undefined));
    return this.running;
  }
}
