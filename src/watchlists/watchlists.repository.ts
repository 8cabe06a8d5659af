import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { AppError } from '../common/errors';
import type { FilterResultDto } from '../provider/dto/filter-result.dto';
import type { WatchedField, WatchInterval } from './watch-rules';

export type StoredStatus = 'active' | 'paused' | 'paused_insufficient_credits';

export interface Watchlist {
  id: string;
  seq: string;
  accountId: string;
  name: string | null;
  interval: WatchInterval;
  callbackUrl: string | null;
  status: StoredStatus;
  total: number;
  round: number;
  roundRunning: boolean;
  nextCheckAt: Date;
  createdAt: Date;
}

export interface RoundRow {
  round: number;
  trigger: 'schedule' | 'manual';
  costPerNumber: number;
  checked: number;
  failed: number;
  changes: number;
  startedAt: Date;
  completedAt: Date | null;
}

export interface EntryRow {
  id: string;
  phone: string;
  reference: string | null;
  result: FilterResultDto | null;
  error: string | null;
  checkedAt: Date | null;
}

export interface ChangeRow {
  id: string;
  phone: string;
  reference: string | null;
  field: WatchedField;
  before: string | boolean | null;
  after: string | boolean | null;
  round: number;
  detectedAt: Date;
}

export interface NewEntry {
  phone: string;
  reference: string | null;
}

const WATCHLIST_COLUMNS = `w.id, w.seq, w.account_id, w.name, w.interval, w.callback_url, w.status, w.round, w.round_running, w.next_check_at, w.created_at,
  (SELECT count(*) FROM watchlist_entries e WHERE e.watchlist_id = w.id AND e.removed_at IS NULL) AS total`;

/** The watchlists of accounts, their entries and changes, as the API reads and edits them. */
@Injectable()
export class WatchlistsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * The watchlist and its entries in one transaction, under a per-account lock so that concurrent
   * creations cannot together pass the plan's limit of watched numbers.
   */
  async create(
    watchlist: { id: string; accountId: string; name: string | null; interval: WatchInterval; callbackUrl: string | null; group: string },
    entries: NewEntry[],
    maxWatched: number,
  ): Promise<Watchlist> {
    return this.db.transaction(async (em) => {
      await this.checkLimit(em, watchlist.accountId, entries.length, maxWatched);
      await em.query(
        `INSERT INTO watchlists (id, account_id, name, interval, callback_url, schedule_group, next_check_at) VALUES ($1, $2, $3, $4, $5, $6, now())`,
        [watchlist.id, watchlist.accountId, watchlist.name, watchlist.interval, watchlist.callbackUrl, watchlist.group],
      );
      await this.insertEntries(em, watchlist.id, entries);
      return (await this.findIn(em, watchlist.accountId, watchlist.id))!;
    });
  }

  find(accountId: string, id: string): Promise<Watchlist | undefined> {
    return this.findIn(this.db.manager, accountId, id);
  }

  async page(accountId: string, limit: number, beforeSeq: string | undefined): Promise<Watchlist[]> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      `SELECT ${WATCHLIST_COLUMNS} FROM watchlists w
        WHERE w.account_id = $1 AND w.status <> 'deleted' AND ($2::bigint IS NULL OR w.seq < $2::bigint)
        ORDER BY w.seq DESC LIMIT $3`,
      [accountId, beforeSeq ?? null, limit],
    );
    return rows.map(toWatchlist);
  }

  async lastRounds(watchlistIds: string[]): Promise<Map<string, RoundRow>> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      `SELECT DISTINCT ON (watchlist_id) * FROM watchlist_rounds WHERE watchlist_id = ANY($1::uuid[]) ORDER BY watchlist_id, round DESC`,
      [watchlistIds],
    );
    return new Map(rows.map((row) => [row.watchlist_id as string, toRound(row)]));
  }

  async entries(watchlistId: string, limit: number, beforeId: string | undefined): Promise<EntryRow[]> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      `SELECT id, phone, reference, last_result, last_error, checked_at FROM watchlist_entries
        WHERE watchlist_id = $1 AND removed_at IS NULL AND ($2::bigint IS NULL OR id < $2::bigint)
        ORDER BY id DESC LIMIT $3`,
      [watchlistId, beforeId ?? null, limit],
    );
    return rows.map((row) => ({
      id: String(row.id),
      phone: row.phone as string,
      reference: row.reference as string | null,
      result: row.last_result as FilterResultDto | null,
      error: row.last_error as string | null,
      checkedAt: row.checked_at as Date | null,
    }));
  }

  async changes(watchlistId: string, since: Date | undefined, limit: number, beforeId: string | undefined): Promise<ChangeRow[]> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      `SELECT c.id, c.phone, e.reference, c.field, c.before, c.after, c.round, c.detected_at
         FROM watchlist_changes c JOIN watchlist_entries e ON e.id = c.entry_id
        WHERE c.watchlist_id = $1 AND ($2::timestamptz IS NULL OR c.detected_at >= $2) AND ($3::bigint IS NULL OR c.id < $3::bigint)
        ORDER BY c.id DESC LIMIT $4`,
      [watchlistId, since ?? null, beforeId ?? null, limit],
    );
    return rows.map(toChange);
  }

  /** The changes of one round, for its callback. */
  async changesOfRound(watchlistId: string, round: number): Promise<ChangeRow[]> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      `SELECT c.id, c.phone, e.reference, c.field, c.before, c.after, c.round, c.detected_at
         FROM watchlist_changes c JOIN watchlist_entries e ON e.id = c.entry_id
        WHERE c.watchlist_id = $1 AND c.round = $2 ORDER BY c.id`,
      [watchlistId, round],
    );
    return rows.map(toChange);
  }

  async update(
    accountId: string,
    id: string,
    change: { name?: string; interval?: WatchInterval; callbackUrl?: string | null; status?: StoredStatus; nextCheckAt?: Date },
  ): Promise<void> {
    await this.db.query(
      `UPDATE watchlists SET
         name = CASE WHEN $3 THEN $4 ELSE name END,
         interval = COALESCE($5, interval),
         callback_url = CASE WHEN $6 THEN $7 ELSE callback_url END,
         status = COALESCE($8, status),
         next_check_at = COALESCE($9, next_check_at)
       WHERE account_id = $1 AND id = $2 AND status <> 'deleted'`,
      [
        accountId, id, change.name !== undefined, change.name ?? null, change.interval ?? null,
        change.callbackUrl !== undefined, change.callbackUrl ?? null, change.status ?? null, change.nextCheckAt ?? null,
      ],
    );
  }

  /** Adds numbers (a removed one comes back), under the same per-account limit as creation. */
  async addEntries(accountId: string, watchlistId: string, entries: NewEntry[], maxWatched: number): Promise<void> {
    await this.db.transaction(async (em) => {
      const phones = entries.map((entry) => entry.phone);
      const [{ count }] = await em.query(
        `SELECT count(*) FROM watchlist_entries WHERE watchlist_id = $1 AND removed_at IS NULL AND phone = ANY($2::text[])`,
        [watchlistId, phones],
      );
      await this.checkLimit(em, accountId, entries.length - Number(count), maxWatched);
      await this.insertEntries(em, watchlistId, entries);
    });
  }

  /** Stops watching numbers. An entry charged in a running round still gets its answer (it was paid for). */
  async removeEntries(watchlistId: string, phones: string[]): Promise<void> {
    await this.db.query(`UPDATE watchlist_entries SET removed_at = now() WHERE watchlist_id = $1 AND phone = ANY($2::text[]) AND removed_at IS NULL`, [
      watchlistId,
      phones,
    ]);
  }

  /** Deleted watchlists are kept for the ledger's sake (their rounds' sources) but never shown or run again. */
  async markDeleted(accountId: string, id: string): Promise<boolean> {
    const [, count] = await this.db.query(`UPDATE watchlists SET status = 'deleted' WHERE account_id = $1 AND id = $2 AND status <> 'deleted'`, [
      accountId,
      id,
    ]);
    return count > 0;
  }

  private async findIn(em: EntityManager, accountId: string, id: string): Promise<Watchlist | undefined> {
    const rows: Array<Record<string, unknown>> = await em.query(
      `SELECT ${WATCHLIST_COLUMNS} FROM watchlists w WHERE w.account_id = $1 AND w.id = $2 AND w.status <> 'deleted'`,
      [accountId, id],
    );
    return rows[0] && toWatchlist(rows[0]);
  }

  private async checkLimit(em: EntityManager, accountId: string, adding: number, maxWatched: number): Promise<void> {
    await em.query(`SELECT pg_advisory_xact_lock(hashtextextended('watchlists:' || $1, 0))`, [accountId]);
    const [{ watched }] = await em.query(
      `SELECT count(*) AS watched FROM watchlist_entries e JOIN watchlists w ON w.id = e.watchlist_id
        WHERE w.account_id = $1 AND w.status <> 'deleted' AND e.removed_at IS NULL`,
      [accountId],
    );
    if (Number(watched) + adding > maxWatched) {
      throw new AppError(
        'INVALID_REQUEST',
        `Your plan lets you watch ${maxWatched} numbers across your watchlists; you watch ${watched} and this adds ${adding}. ` +
          'Remove numbers or delete a watchlist first.',
      );
    }
  }

  private async insertEntries(em: EntityManager, watchlistId: string, entries: NewEntry[]): Promise<void> {
    await em.query(
      `INSERT INTO watchlist_entries (watchlist_id, phone, reference)
       SELECT $1, phone, reference FROM unnest($2::text[], $3::text[]) AS e(phone, reference)
       ON CONFLICT (watchlist_id, phone) DO UPDATE SET removed_at = NULL, reference = COALESCE(EXCLUDED.reference, watchlist_entries.reference)`,
      [watchlistId, entries.map((e) => e.phone), entries.map((e) => e.reference)],
    );
  }
}

function toWatchlist(row: Record<string, unknown>): Watchlist {
  return {
    id: row.id as string,
    seq: String(row.seq),
    accountId: row.account_id as string,
    name: row.name as string | null,
    interval: row.interval as WatchInterval,
    callbackUrl: row.callback_url as string | null,
    status: row.status as StoredStatus,
    total: Number(row.total),
    round: Number(row.round),
    roundRunning: row.round_running as boolean,
    nextCheckAt: row.next_check_at as Date,
    createdAt: row.created_at as Date,
  };
}

export function toRound(row: Record<string, unknown>): RoundRow {
  return {
    round: Number(row.round),
    trigger: row.trigger as 'schedule' | 'manual',
    costPerNumber: Number(row.cost_per_number),
    checked: Number(row.checked),
    failed: Number(row.failed),
    changes: Number(row.changes),
    startedAt: row.started_at as Date,
    completedAt: row.completed_at as Date | null,
  };
}

function toChange(row: Record<string, unknown>): ChangeRow {
  return {
    id: String(row.id),
    phone: row.phone as string,
    reference: row.reference as string | null,
    field: row.field as WatchedField,
    before: row.before as string | boolean | null,
    after: row.after as string | boolean | null,
    round: Number(row.round),
    detectedAt: row.detected_at as Date,
  };
}
