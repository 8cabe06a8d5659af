import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Scheduler } from '../common/scheduler';
import { AppConfig } from '../config/app-config';
import { CreditsService } from './credits.service';

/**
 * No credit is lost on a crash: a charge whose call never answered (settled neither by an answer
 * nor by a refund) is refunded once it is older than UNSETTLED_CHARGE_REFUND_AFTER_SECONDS, at
 * start-up and then periodically. Every instance sweeps; the refund is exactly-once in the database.
 */
@Injectable()
export class AbandonedChargesSweeper implements OnApplicationBootstrap {
  static readonly JOB = 'abandoned-charges';
  private readonly logger = new Logger(AbandonedChargesSweeper.name);

  constructor(
    private readonly credits: CreditsService,
    private readonly config: AppConfig,
    private readonly scheduler: Scheduler,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.sweep().catch((error: Error) => this.logger.warn(`Sweep of unanswered charges failed: ${error.message}`));
    const bound = this.config.unsettledChargeRefundAfterSeconds;
    const everyMs = Math.min(30_000, Math.max(1000, (bound * 1000) / 4));
    this.scheduler.every({ name: AbandonedChargesSweeper.JOB, everyMs }, () => this.sweep());
  }

  /** One round: refunds the charges left unanswered longer than the bound; resolves to how many. */
  sweep(): Promise<number> {
    return this.credits.refundAbandonedCharges(this.config.unsettledChargeRefundAfterSeconds);
  }
}
