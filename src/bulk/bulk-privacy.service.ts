import { Injectable } from '@nestjs/common';
import { daysBefore } from '../common/clock';
import { AppError } from '../common/errors';
import { erasureHashes, storedFormHash } from '../common/number-hash';
import { maskPhone } from '../common/phone';
import { AppConfig } from '../config/app-config';
import { BulkPrivacyRepository } from './bulk-privacy.repository';

/** Why an entry erased before its lookup has no answer (it is refunded like any failed lookup). */
export const ERASED_BEFORE_LOOKUP = 'This number was erased on request before it was looked up; its credits are refunded.';
/** The error an entry erased before its lookup is answered with. */
export const ERASED_BEFORE_LOOKUP_FAILURE = { code: 'PROVIDER_UNAVAILABLE', message: ERASED_BEFORE_LOOKUP } as const;

/** The bulk side of retention and erasure (docs/privacy.md); no timers here, so the admin CLI can use it. */
@Injectable()
export class BulkPrivacyService {
  constructor(
    private readonly records: BulkPrivacyRepository,
    private readonly config: AppConfig,
  ) {}

  /** One retention batch: entries of jobs completed more than RETENTION_BULK_ENTRIES_DAYS before `now`. */
  async deleteExpiredEntries(limit: number, now: Date): Promise<number> {
    return (await this.records.deleteEntriesOfJobsCompletedBefore(daysBefore(now, this.config.retention.bulkEntriesDays), limit)).entries;
  }

  /** DELETE /api/v1/filter/bulk/{id}: 404 for another account's or an unknown job, 400 while it runs. */
  async deleteEntries(accountId: string, jobId: string, status: string): Promise<number> {
    if (status !== 'completed') {
      throw new AppError('INVALID_REQUEST', `Bulk job ${jobId} is ${status}: its entries can be deleted once it has completed.`);
    }
    const deleted = await this.records.deleteEntriesOfCompletedJob(accountId, jobId);
    if (deleted === undefined) throw new AppError('NOT_FOUND', 'No bulk job with this id.');
    return deleted;
  }

  eraseNumber(e164: string): Promise<number> {
    return this.records.eraseNumber(erasureHashes(this.config.dataHashKey, e164), e164, maskPhone(e164), ERASED_BEFORE_LOOKUP_FAILURE);
  }

  /**
   * One batch of the retention run: entries written before their keyed hash was (the upgrade that
   * added it) get it, so an erasure finds them through its index. The entries hashed (0: none left).
   */
  async hashUnhashedEntries(limit: number): Promise<number> {
    const rows = await this.records.unhashed(limit);
    const written = await this.records.setHashes(rows.map((row) => ({ ...row, hash: storedFormHash(this.config.dataHashKey, row.phone) ?? '' })));
    // Rows changed meanwhile are written by a later batch; none found means none left.
    return rows.length === 0 ? 0 : Math.max(written, 1);
  }
}
