import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { AppError } from '../common/errors';
import { shutdownStep } from '../common/shutdown-steps';
import { withTimeout } from '../common/timeout';
import { CHARGE_STATEMENT_TIMEOUT_MS } from './charge-batcher';
import type { StoredProvenance } from '../checks/provenance';
import { CreditsRepository } from './credits.repository';

/** Most settles one statement carries. */
const MAX_BATCH = 500;

interface QueuedSettle {
  chargeId: string;
  answeredBy: StoredProvenance | null;
  resolve: (settled: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for settles: a call is answered only once its charge is settled in the database, so
 * a 200 is never refunded as "never answered" when the instance dies right after it. There is no
 * timer (like ChargeBatcher): a lone settle goes out in the next turn of the event loop, and the
 * settles that arrive while one statement is running are written together by the next, so under
 * load a call still costs a fraction of a statement. A statement that fails (or does not answer
 * within CHARGE_STATEMENT_TIMEOUT_MS) fails its calls, whose charges the caller gives back.
 */
@Injectable()
export class SettlementBatcher implements BeforeApplicationShutdown {
  private pending: QueuedSettle[] = [];
  private draining: Promise<void> | undefined;
  /** See CHARGE_STATEMENT_TIMEOUT_MS (a field, so that a test can shorten it). */
  timeoutMs = CHARGE_STATEMENT_TIMEOUT_MS;

  constructor(private readonly credits: CreditsRepository) {}

  /**
   * Resolves once the statement has run: true when it settled the charge, false when the charge was
   * refunded before (then the call must not be answered as charged). Rejects when the statement failed.
   * `answeredBy` (which provider answered each check, and when) is written by the same statement.
   */
  settle(chargeId: string, answeredBy: StoredProvenance | null = null): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.pending.push({ chargeId, answeredBy, resolve, reject });
      this.draining ??= new Promise<void>((started) => setImmediate(started)).then(() => this.drain());
    });
  }

  /** Resolves when every settle queued so far has been written (or has failed). */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  async beforeApplicationShutdown(): Promise<void> {
    await shutdownStep('writing the pending settles', () => this.flush());
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_BATCH);
      try {
        const statement = this.credits.settleMany(batch.map(({ chargeId, answeredBy }) => ({ chargeId, answeredBy })));
        const settled = await withTimeout(statement, this.timeoutMs, settleTimedOut);
        for (const call of batch) call.resolve(settled.has(call.chargeId));
      } catch (error) {
        for (const call of batch) call.reject(error);
      }
    }
    this.draining = undefined;
  }
}

const settleTimedOut = () => new AppError('SERVICE_UNAVAILABLE', 'The credits ledger did not record the answer in time.');
