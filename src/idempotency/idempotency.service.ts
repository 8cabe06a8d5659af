import { Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { KEY_IN_USE } from '../credits/credits.service';
import { IdempotencyRepository, StoredIdempotentCall } from './idempotency.repository';

const KEY_SHAPE = /^[\x20-\x7E]{1,255}$/;

/** An answer as the bytes of its JSON body; `replayed` when it is not the first answer for its key. */
export interface SerializedAnswer {
  body: string;
  replayed: boolean;
}

export interface IdempotentWork {
  /** The paid call; its charge carries the key's id, which the ledger allows once. */
  charged: (idempotencyKeyId: string | undefined) => Promise<string>;
  /** The answer again, without charging: the first attempt was charged and answered, its answer was not stored. */
  free: () => Promise<string>;
}

/**
 * `Idempotency-Key` (docs/api.md): a retry with the same key and body within 24 h gets the first
 * answer again and is not charged again. The ledger enforces "charged once": the charge of a call
 * carries its key's id under a unique index, and only a refund frees it. Only successful answers are
 * kept: a call that failed (402, 503...) kept no charge, so its retry runs again.
 *
 * A key in use is decided by its charge: an answer stored → replayed byte for byte; charged and
 * settled but no answer stored (the database went away before it could be stored) → answered again
 * without a charge; charged, not settled → still running, 409 (if its instance died, the sweep
 * refunds the charge, and then a retry runs again); not charged → 409, unless the attempt holding it
 * took it longer than UNSETTLED_CHARGE_REFUND_AFTER_SECONDS ago (it died before charging): then a
 * retry takes it over. Nothing here shortens the key's 24 h.
 */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  constructor(
    private readonly calls: IdempotencyRepository,
    private readonly config: AppConfig,
  ) {}

  static validateKey(key: string | undefined): string | undefined {
    if (key === undefined) return undefined;
    if (!KEY_SHAPE.test(key)) throw new AppError('INVALID_REQUEST', 'Idempotency-Key must be 1 to 255 printable ASCII characters.');
    return key;
  }

  async run(accountId: string, key: string | undefined, request: unknown, work: IdempotentWork): Promise<SerializedAnswer> {
    if (key === undefined) return { body: await work.charged(undefined), replayed: false };
    const requestHash = createHash('sha256').update(JSON.stringify(request)).digest('hex');
    const abandonedAfter = this.config.unsettledChargeRefundAfterSeconds;
    for (let attempt = 1; ; attempt++) {
      const claimed = await this.calls.claim(accountId, key, requestHash);
      if (claimed !== undefined) return { body: await this.runCharged(claimed, work), replayed: false };
      const stored = await this.calls.find(accountId, key, abandonedAfter);
      // Gone between the two statements (its call failed and freed it): claim it again.
      if (stored === undefined && attempt < 3) continue;
      if (stored === undefined) throw new AppError('IDEMPOTENCY_CONFLICT', KEY_IN_USE);
      if (stored.requestHash !== requestHash) {
        throw new AppError('IDEMPOTENCY_CONFLICT', 'This Idempotency-Key was already used with a different request body.');
      }
      const outcome = await this.resume(stored, work);
      if (outcome) return outcome;
      throw new AppError('IDEMPOTENCY_CONFLICT', KEY_IN_USE);
    }
  }

  /** What a retry gets for a key in use with its body; undefined for 409 (still running). */
  private async resume(stored: StoredIdempotentCall, work: IdempotentWork): Promise<SerializedAnswer | undefined> {
    if (stored.status === 'completed' && stored.responseBody !== null) return { body: stored.responseBody, replayed: true };
    if (stored.charge === 'settled') return { body: await this.store(stored.id, await work.free()), replayed: true };
    if (stored.charge === 'none' && stored.claimedLongAgo && (await this.calls.takeOver(stored.id, this.config.unsettledChargeRefundAfterSeconds))) {
      return { body: await this.runCharged(stored.id, work), replayed: false };
    }
    return undefined;
  }

  private async runCharged(keyId: string, work: IdempotentWork): Promise<string> {
    let body: string;
    try {
      body = await work.charged(keyId);
    } catch (error) {
      await this.calls.release(keyId).catch(() => undefined);
      throw error;
    }
    // The first answer is the one sent; should a retry have stored its own meanwhile, later replays get that one.
    await this.store(keyId, body);
    return body;
  }

  /**
   * The call was answered (and charged): never turn that into an error. If storing the answer
   * fails, a retry finds the charge settled and gets the answer again, not charged again.
   */
  private async store(keyId: string, body: string): Promise<string> {
    try {
      return await this.calls.complete(keyId, body);
    } catch (error) {
      this.logger.warn(`Idempotency-Key answer not stored (a retry is answered again, without a charge): ${(error as Error).message}`);
      return body;
    }
  }
}
