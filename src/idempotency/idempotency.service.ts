import { Injectable, Logger } from '@nestjs/common';
import { keyedHash, requestHash as hashOf } from '../common/keyed-hash';
import { AppError } from '../common/errors';
import { hoursBefore } from '../common/clock';
import { KEY_LIFE_HOURS, validateIdempotencyKey } from '../common/idempotency-key';
import { AppConfig } from '../config/app-config';
import { CreditsService, KeyAlreadyCharged } from '../credits/credits.service';

export const KEY_IN_USE =
  'A request with this Idempotency-Key is still running, or its charge is still being settled; retry when it has answered.';
import { IdempotencyRepository, KeyAttempt, StoredIdempotentCall } from './idempotency.repository';

/** An answer as the bytes of its JSON body; `replayed` when it is not the first answer for its key. */
export interface SerializedAnswer {
  body: string;
  replayed: boolean;
}

export interface IdempotentWork {
  /** The paid call; its charge carries the key's id, which the ledger allows once. */
  charged: (idempotencyKeyId: string | undefined) => Promise<string>;
  /**
   * Runs the call again without charging: the first attempt was charged and answered, its answer was not
   * stored. `context`: what that attempt was charged for (`run`'s context; null for keys older than it).
   */
  rerunUncharged: (context: unknown) => Promise<string>;
  /**
   * For calls whose effect is tied to the key's id by the database rather than by a charge (a
   * watchlist's creation): the answer of the effect made under this id, if it was made. A key in
   * use whose effect exists is answered with it (and it is stored), like a settled charge; null when
   * the effect exists but its answer is no longer kept (erased): 409, and the key is never taken over.
   */
  made?: (idempotencyKeyId: string) => Promise<string | null | undefined>;
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
 * retry takes it over. Each attempt holds its own token, and only the holder frees a key (an attempt
 * slower than the bound that fails after a take-over leaves the key to the retry); a key with a
 * charge is never deleted during its life: `release` locks it first, retention deletes keys only past
 * their life, and an erasure scrubs a live key instead of deleting it (docs/privacy.md). Nothing here
 * shortens the key's 24 h.
 */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  constructor(
    private readonly calls: IdempotencyRepository,
    private readonly credits: CreditsService,
    private readonly config: AppConfig,
  ) {}

  static validateKey(key: string | undefined): string | undefined {
    return validateIdempotencyKey(key);
  }

  /**
   * `context`: what the charged call is charged for (for /filter, its enabled checks), stored with the
   * key: a retry answered again for free gets exactly that, not what the account has enabled since.
   * `phone`: the one number the request is about (/filter), so that an erasure finds its keys.
   */
  async run(accountId: string, key: string | undefined, request: unknown, work: IdempotentWork, context: unknown = null, phone?: string): Promise<SerializedAnswer> {
    if (key === undefined) return { body: await work.charged(undefined), replayed: false };
    const requestHash = hashOf(request, this.config.dataHashKey);
    const phoneHash = phone === undefined ? null : keyedHash(this.config.dataHashKey, phone);
    const abandonedAfter = this.config.unsettledChargeRefundAfterSeconds;
    for (let attempt = 1; ; attempt++) {
      const claimed = await this.calls.claim(accountId, key, requestHash.keyed, context, phoneHash);
      if (claimed !== undefined) return { body: await this.runCharged(claimed, work), replayed: false };
      const stored = await this.calls.find(accountId, key, abandonedAfter);
      // Gone between the two statements (its call failed and freed it): claim it again.
      if (stored === undefined && attempt < 3) continue;
      if (stored === undefined) throw new AppError('IDEMPOTENCY_CONFLICT', KEY_IN_USE);
      // A key claimed before the upgrade (docs/privacy.md) stored its body's unkeyed hash: still the same request.
      if (!requestHash.matches(stored.requestHash)) {
        throw new AppError('IDEMPOTENCY_CONFLICT', 'This Idempotency-Key was already used with a different request body.');
      }
      const outcome = await this.resume(stored, work, context);
      if (outcome) return outcome;
      throw new AppError('IDEMPOTENCY_CONFLICT', KEY_IN_USE);
    }
  }

  /** Retention (docs/privacy.md): keys whose life ended more than the grace period before `now`, a batch at a time. */
  deleteExpired(limit: number, now: Date): Promise<number> {
    return this.calls.deleteCreatedBefore(hoursBefore(now, KEY_LIFE_HOURS + this.config.retention.idempotencyGraceHours), limit);
  }

  /**
   * Erasure: the keys used for this number are deleted, or scrubbed while their life lasts (charged at
   * most once still holds); a call of such a key still running never stores its answer (`complete`).
   * `answerKeys`: keys whose stored answer lists the number (a watchlist's creation: watchlists/ knows them).
   */
  async eraseNumber(e164: string, answerKeys: string[] = []): Promise<number> {
    const { deleted, scrubbed } = await this.calls.eraseForPhone(keyedHash(this.config.dataHashKey, e164), answerKeys);
    return deleted + scrubbed;
  }

  /** What a retry gets for a key in use with its body; undefined for 409 (still running). */
  private async resume(stored: StoredIdempotentCall, work: IdempotentWork, context: unknown): Promise<SerializedAnswer | undefined> {
    if (stored.status === 'completed' && stored.responseBody !== null) return { body: stored.responseBody, replayed: true };
    if (stored.charge === 'settled') {
      // Marked first: a give-back of that charge racing this retry either refunded it before (then no free answer) or never will.
      if (!(await this.credits.markKeyChargeAnswered(stored.id))) return undefined;
      return { body: await this.store(stored.id, await work.rerunUncharged(stored.context)), replayed: true };
    }
    const made = work.made && (await work.made(stored.id));
    if (made === null) return undefined;
    if (made !== undefined) return { body: await this.store(stored.id, made), replayed: true };
    if (stored.charge === 'none' && stored.claimedLongAgo) {
      const attempt = await this.calls.takeOver(stored.id, this.config.unsettledChargeRefundAfterSeconds, context);
      if (attempt !== undefined) return { body: await this.runCharged({ id: stored.id, attempt }, work), replayed: false };
    }
    return undefined;
  }

  private async runCharged(key: KeyAttempt, work: IdempotentWork): Promise<string> {
    let body: string;
    try {
      body = await work.charged(key.id);
    } catch (error) {
      await this.calls.release(key).catch(() => undefined);
      // The ledger already holds this key's charge (a twin charged first): the key is in use.
      if (error instanceof KeyAlreadyCharged) throw new AppError('IDEMPOTENCY_CONFLICT', KEY_IN_USE);
      throw error;
    }
    // The first answer is the one sent; should a retry have stored its own meanwhile, later replays get that one.
    await this.store(key.id, body);
    return body;
  }

  /**
   * The call was answered (and charged): never turn that into an error. If storing the answer
   * fails, a retry finds the charge settled and gets the answer again, not charged again.
   */
  private async store(keyId: string, body: string): Promise<string> {
    try {
      const stored = await this.calls.complete(keyId, body);
      // Erased while the call ran: its answer is given to this caller only, never kept.
      if (stored === null) return body;
      if (stored !== undefined) return stored;
      this.logger.error(`Idempotency-Key ${keyId} was answered but its key row is gone: its answer is not stored`);
      return body;
    } catch (error) {
      this.logger.warn(`Idempotency-Key answer not stored (a retry is answered again, without a charge): ${(error as Error).message}`);
      return body;
    }
  }
}

