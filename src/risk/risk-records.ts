import { Injectable } from '@nestjs/common';
import { Clock, daysBefore } from '../common/clock';
import { keyedHash } from '../common/keyed-hash';
import { AppConfig } from '../config/app-config';
import { RiskCounters } from './counters/risk-counters';
import { rangesOf } from './number-ranges';
import { RiskFeedbackRepository } from './risk-feedback.repository';

/** What an erasure removed of the risk verdict's records. */
export interface RiskErasure {
  feedback: number;
  asks: number;
}

/**
 * What the risk verdict keeps about numbers, and how it goes (docs/privacy.md): the counters' asks
 * (Redis or memory, 24 h at most) and the feedback rows (PostgreSQL, RETENTION_RISK_FEEDBACK_DAYS).
 * No HTTP and no timers here: the retention scheduler, the erasure (also run by the admin CLI) and the
 * feedback route use it.
 */
@Injectable()
export class RiskRecords {
  constructor(
    private readonly counters: RiskCounters,
    private readonly feedbacks: RiskFeedbackRepository,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  /**
   * Feedback on the account's last verdict for the number (within 24 h): counted in that verdict's
   * verification rates, and kept as a row. False when the account asked no verdict for it in 24 h, or
   * when the number was erased meanwhile (its row is not written).
   */
  async feedback(accountId: string, e164: string, verified: boolean): Promise<boolean> {
    const at = this.clock.now();
    // Before the ask is read: an erasure completed after this point forgot it, so the row is not written.
    const began = await this.feedbacks.began();
    const asked = await this.counters.feedback(accountId, e164, verified, at);
    if (!asked) return false;
    return this.feedbacks.record(accountId, keyedHash(this.config.dataHashKey, e164), new Date(asked.askedAt), verified, new Date(at), began);
  }

  /** One retention batch: feedback rows given more than RETENTION_RISK_FEEDBACK_DAYS before `now`. */
  deleteExpired(limit: number, now: Date): Promise<number> {
    return this.feedbacks.deleteCreatedBefore(daysBefore(now, this.config.retention.riskFeedbackDays), limit);
  }

  /** Erasure: the number's feedback rows (every account) and every account's asks of it in the counters. */
  async eraseNumber(e164: string): Promise<RiskErasure> {
    const feedback = await this.feedbacks.deleteForPhone(keyedHash(this.config.dataHashKey, e164));
    const asks = await this.counters.forget(e164, rangesOf(e164));
    return { feedback, asks };
  }
}
