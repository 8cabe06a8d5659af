import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { reportShutdownProblem, shutdownStep } from '../common/shutdown-steps';
import { CreditsRepository } from './credits.repository';

/** How long an answered call's settle may wait to share one UPDATE with its neighbours. */
const FLUSH_AFTER_MS = 20;
const FLUSH_AT_SIZE = 500;
const RETRY_AFTER_MS = 1000;

/**
 * Marks answered charges settled in batches: one `UPDATE … WHERE id = ANY(…)` every 20 ms instead of
 * one statement per call, which leaves a paid call with a single database statement (its charge).
 * A settle that a crash prevents only lets the sweep refund an answered call: the customer never
 * loses a credit and balance = ledger sum holds. On shutdown the pending settles are written.
 */
@Injectable()
export class SettlementBatcher implements BeforeApplicationShutdown {
  private readonly logger = new Logger(SettlementBatcher.name);
  private pending: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(private readonly credits: CreditsRepository) {}

  settle(chargeId: string): void {
    this.pending.push(chargeId);
    if (this.pending.length >= FLUSH_AT_SIZE) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_AFTER_MS);
  }

  /** Writes every settle queued so far; resolves when they are in the database. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length > 0) {
      this.flushing = this.flushing.then(() =>
        this.credits.settleMany(batch).catch((error: Error) => {
          // Put them back: the sweep would otherwise refund these answered calls. The next flush
          // retries them; only a crash before it succeeds leaves them to the sweep.
          this.logger.warn(`${batch.length} settle(s) not written yet, retrying: ${error.message}`);
          this.pending.unshift(...batch);
          this.timer ??= setTimeout(() => void this.flush(), RETRY_AFTER_MS);
        }),
      );
    }
    return this.flushing;
  }

  async beforeApplicationShutdown(): Promise<void> {
    await shutdownStep('writing the pending settles', () => this.flush());
    if (this.pending.length === 0) return;
    clearTimeout(this.timer);
    reportShutdownProblem(`${this.pending.length} settle(s) of answered calls not written (database unavailable): the sweep will refund those calls`);
  }
}
