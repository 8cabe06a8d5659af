import { Injectable, Logger } from '@nestjs/common';
import { daysBefore, hoursBefore } from '../common/clock';
import { AdminAuditRepository } from '../audit/audit.repository';
import { BulkPrivacyService } from '../bulk/bulk-privacy.service';
import { AppConfig } from '../config/app-config';
import { LedgerPrivacyService } from '../credits/ledger-privacy.service';
import { IdempotencyService } from '../idempotency/idempotency.service';
import { WATCHLIST_RETENTION_STORES, WatchlistPrivacyService } from '../watchlists/watchlist-privacy.service';
import { RiskRecords } from '../risk/risk-records';
import { NumberErasures, TOMBSTONE_HOURS } from '../erasures/number-erasures';

/** Rows each retention job deleted (or, for the ledger, masked) in one run. */
export type RetentionCounts = Record<string, number>;

/**
 * The retention periods of docs/privacy.md, applied in bounded batches: each batch is one statement on
 * at most RETENTION_BATCH_SIZE rows (its own short transaction, never a long lock), and a job goes on
 * until a batch finds less than a full one. Every batch skips or re-checks rows another instance is
 * working on, so two instances running at once divide the work and never do a row twice.
 */
@Injectable()
export class RetentionService {
  private readonly logger = new Logger(RetentionService.name);

  constructor(
    private readonly config: AppConfig,
    private readonly ledger: LedgerPrivacyService,
    private readonly bulk: BulkPrivacyService,
    private readonly watchlists: WatchlistPrivacyService,
    private readonly idempotency: IdempotencyService,
    private readonly audit: AdminAuditRepository,
    private readonly risk: RiskRecords,
    private readonly tombstones: NumberErasures,
  ) {}

  /** One run of every job, each period counted back from `now` (the Clock's, read once by the caller). */
  async runOnce(now: Date, shouldStop: () => boolean = () => false): Promise<RetentionCounts> {
    const jobs: Array<[string, (limit: number) => Promise<number>]> = [
      ['bulk_entries', (limit) => this.bulk.deleteExpiredEntries(limit, now)],
      // Not a deletion: entries written before the erasure's hash column get it (after the deletion, so expired ones are not hashed first).
      ['bulk_entries_hashed', (limit) => this.bulk.hashUnhashedEntries(limit)],
      ['ledger_phones_masked', (limit) => this.ledger.maskOldPhones(limit, now)],
      ...WATCHLIST_RETENTION_STORES.map((store): [string, (limit: number) => Promise<number>] => [store, (limit) => this.watchlists.deleteExpired(store, limit, now)]),
      ['idempotency_keys', (limit) => this.idempotency.deleteExpired(limit, now)],
      ['risk_feedback', (limit) => this.risk.deleteExpired(limit, now)],
      ['admin_audit', (limit) => this.audit.deleteCreatedBefore(daysBefore(now, this.config.retention.adminAuditDays), limit)],
      // Erasure tombstones outlive by far the oldest writer transaction that may still check them (src/erasures/number-erasures.ts).
      ['number_erasures', (limit) => this.tombstones.deleteOlderThan(hoursBefore(now, TOMBSTONE_HOURS), limit)],
    ];
    const counts: RetentionCounts = {};
    for (const [name, batch] of jobs) {
      counts[name] = 0;
      for (;;) {
        if (shouldStop()) return counts;
        const done = await batch(this.config.retention.batchSize);
        counts[name] += done;
        // Until a batch finds nothing: one that found less than a full batch may have skipped rows
        // another instance's run held at that moment (SKIP LOCKED), and more may be due behind them.
        if (done === 0) break;
        // Let the calls waiting on this instance run between two batches.
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    const total = Object.values(counts).reduce((sum, n) => sum + n, 0);
    if (total > 0) this.logger.log(`Retention: ${Object.entries(counts).filter(([, n]) => n > 0).map(([name, n]) => `${name} ${n}`).join(', ')}`);
    return counts;
  }
}
