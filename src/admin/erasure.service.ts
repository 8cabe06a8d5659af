import { Injectable, Logger } from '@nestjs/common';
import { AppError } from '../common/errors';
import { erasureHashes } from '../common/number-hash';
import { AppConfig } from '../config/app-config';
import { NumberErasures } from '../erasures/number-erasures';
import { BulkPrivacyService } from '../bulk/bulk-privacy.service';
import { CreditsService } from '../credits/credits.service';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';
import { LedgerPrivacyService } from '../credits/ledger-privacy.service';
import { IdempotencyService } from '../idempotency/idempotency.service';
import { LookupCacheEraser } from '../provider/lookup-cache-eraser';
import { WatchlistPrivacyService } from '../watchlists/watchlist-privacy.service';
import { OutboxPrivacyService } from '../webhooks/outbox-privacy.service';
import { RiskRecords } from '../risk/risk-records';

/** What an erasure changed, store by store (docs/privacy.md, the data map). */
export interface ErasureCounts {
  /** Ledger rows whose phone was reduced to its masked form (amounts untouched). */
  ledger_entries_masked: number;
  /** Bulk entries (every account's jobs) whose phone was reduced to its masked form. */
  bulk_entries_masked: number;
  watchlist_entries_deleted: number;
  watchlist_changes_deleted: number;
  /** Charges of running watchlist rounds that had not checked the number yet, refunded (as for a deleted watchlist). */
  watchlist_charges_refunded: number;
  /** Idempotency-Key rows of the number: deleted, or scrubbed while their key is alive. */
  idempotency_keys_erased: number;
  /** Callback events (the outbox) whose body held the number, deleted. */
  callback_events_deleted: number;
  /** Cached answers forgotten (Redis or memory; every instance's in-process copy too). */
  lookup_cache_entries_deleted: number;
  /** Risk verdict feedback rows of the number (every account), deleted. */
  risk_feedback_deleted: number;
  /** Accounts' asks of a risk verdict for the number, forgotten from the counters. */
  risk_asks_forgotten: number;
}

/**
 * Erases one number from every store of the data map, each through the module that owns it. Every
 * step is idempotent: an erasure that failed half-way is completed by running it again.
 */
@Injectable()
export class ErasureService {
  private readonly logger = new Logger(ErasureService.name);

  constructor(
    private readonly ledger: LedgerPrivacyService,
    private readonly bulk: BulkPrivacyService,
    private readonly watchlists: WatchlistPrivacyService,
    private readonly idempotency: IdempotencyService,
    private readonly lookups: LookupCacheEraser,
    private readonly outbox: OutboxPrivacyService,
    private readonly risk: RiskRecords,
    private readonly credits: CreditsService,
    private readonly txHost: TransactionHost<TypeOrmTx>,
    private readonly tombstones: NumberErasures,
    private readonly config: AppConfig,
  ) {}

  /**
   * `e164`: already normalised. The tombstones first (no insert of the number lands from then on but
   * those that began after the erasure completes), the stores, then the tombstones say it is complete.
   * An erasure that stops half-way leaves them open: the number stays refused until it is run again.
   */
  async erase(e164: string): Promise<ErasureCounts> {
    const erasure = await this.tombstones.begin(erasureHashes(this.config.dataHashKey, e164));
    // The cache first and last: a lookup answered meanwhile may have cached the number again.
    const cachedBefore = await this.forget(e164);
    const watched = await this.eraseWatched(e164);
    const counts = {
      ledger_entries_masked: await this.ledger.maskNumber(e164),
      bulk_entries_masked: await this.bulk.eraseNumber(e164),
      watchlist_entries_deleted: watched.entries,
      watchlist_changes_deleted: watched.changes,
      watchlist_charges_refunded: watched.refunded,
      idempotency_keys_erased: await this.idempotency.eraseNumber(e164, watched.answerKeys),
      callback_events_deleted: await this.outbox.eraseNumber(e164),
      ...(await this.eraseRisk(e164)),
    };
    const cachedAfter = await this.forget(e164);
    await this.tombstones.complete(erasure);
    return { ...counts, lookup_cache_entries_deleted: cachedBefore + cachedAfter };
  }

  /**
   * The watchlists' entries and changes of the number, and the refunds of what running rounds charged
   * for it and will never check: one transaction, so the entry goes iff its charge is given back (the
   * refund's reference is the one a deletion or the round itself would use: never twice).
   */
  private eraseWatched(e164: string): Promise<{ entries: number; changes: number; refunded: number; answerKeys: string[] }> {
    return this.txHost.withTransaction(async () => {
      const { entries, changes, unchecked, answerKeys } = await this.watchlists.eraseNumber(e164);
      let refunded = 0;
      // In the order given (account id, then charge id): each refund locks its account, and erasures
      // running side by side must take accounts in one order, or two of them can deadlock.
      for (const { chargeId, cost } of unchecked) {
        if (await this.credits.refundPart(chargeId, cost, { reference: `refund:${chargeId}`, reason: 'NUMBER_ERASED' })) refunded += 1;
      }
      return { entries, changes, refunded, answerKeys };
    });
  }

  /** The risk verdict's feedback rows and counters; unreachable counters fail the erasure loudly, like the cache. */
  private async eraseRisk(e164: string): Promise<Pick<ErasureCounts, 'risk_feedback_deleted' | 'risk_asks_forgotten'>> {
    try {
      const erased = await this.risk.eraseNumber(e164);
      return { risk_feedback_deleted: erased.feedback, risk_asks_forgotten: erased.asks };
    } catch (error) {
      if (error instanceof AppError) throw error;
      this.logger.warn(`Erasure stopped: the risk counters could not be reached: ${(error as Error).message}`);
      throw new AppError('SERVICE_UNAVAILABLE', 'The risk counters (Redis) could not be reached: the erasure is not complete. Retry once it is back: it is safe to run again.');
    }
  }

  /** An unreachable cache fails the erasure loudly (never a silent partial one); running it again completes it. */
  private async forget(e164: string): Promise<number> {
    try {
      return await this.lookups.forget(e164);
    } catch (error) {
      this.logger.warn(`Erasure stopped: the lookup cache could not be reached: ${(error as Error).message}`);
      throw new AppError('SERVICE_UNAVAILABLE', 'The lookup cache (Redis) could not be reached: the erasure is not complete. Retry once it is back: it is safe to run again.');
    }
  }
}
