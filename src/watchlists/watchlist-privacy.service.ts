import { Injectable } from '@nestjs/common';
import { daysBefore, hoursBefore } from '../common/clock';
import { KEY_LIFE_HOURS } from '../common/idempotency-key';
import { AppConfig } from '../config/app-config';
import { erasureHashes } from '../common/number-hash';
import { WatchlistErasure, WatchlistPrivacyRepository } from './watchlist-privacy.repository';

/** Watchlist stores of retention, in the order they must go (changes before their entries). */
export const WATCHLIST_RETENTION_STORES = [
  'watchlist_deletions_dated',
  'watchlist_changes_of_gone_entries',
  'watchlist_gone_entries',
  'watchlist_changes',
  'watchlist_rounds',
  'watchlist_creation_answers',
] as const;
export type WatchlistRetentionStore = (typeof WATCHLIST_RETENTION_STORES)[number];

/** The watchlists side of retention and erasure (docs/privacy.md); no timers here, so the admin CLI can use it. */
@Injectable()
export class WatchlistPrivacyService {
  constructor(
    private readonly records: WatchlistPrivacyRepository,
    private readonly config: AppConfig,
  ) {}

  /** One retention batch of one store, its periods counted back from `now`: the rows it deleted or cleared. */
  deleteExpired(store: WatchlistRetentionStore, limit: number, now: Date): Promise<number> {
    const r = this.config.retention;
    switch (store) {
      case 'watchlist_deletions_dated':
        return this.records.dateUndatedDeletions(limit, now);
      case 'watchlist_changes_of_gone_entries':
        return this.records.deleteChangesOfGoneEntries(daysBefore(now, r.watchlistRemovedDays), limit);
      case 'watchlist_gone_entries':
        return this.records.deleteGoneEntries(daysBefore(now, r.watchlistRemovedDays), limit);
      case 'watchlist_changes':
        return this.records.deleteChangesBefore(daysBefore(now, r.watchlistChangesDays), limit);
      case 'watchlist_rounds':
        return this.records.deleteRoundsBefore(daysBefore(now, r.watchlistRoundsDays), limit);
      case 'watchlist_creation_answers':
        // Its Idempotency-Key's life and the grace after it, like the key's own row.
        return this.records.clearCreationAnswersBefore(hoursBefore(now, KEY_LIFE_HOURS + r.idempotencyGraceHours), limit);
    }
  }

  /** In the caller's transaction, which refunds `unchecked` (the charges of a running round that will never check the number). */
  eraseNumber(e164: string): Promise<WatchlistErasure> {
    return this.records.eraseNumber(e164, erasureHashes(this.config.dataHashKey, e164));
  }
}
