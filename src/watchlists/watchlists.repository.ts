import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { joinedTransaction, TransactionHost, type TypeOrmTx } from '../database/transactions';
import { erasedSince, numberWrites } from '../erasures/number-erasures';
import { AppError } from '../common/errors';
import { NO_KEY_ABOVE } from '../common/keyset-page';
import { isUniqueViolation } from '../common/unique-violation';
import type { ReportedAnswer } from '../checks/phone-answer.dto';
import type { StoredProvenance } from '../checks/provenance';
import type { WatchInterval } from './watch-rules';
import { ChangeRow, EntryRow, RoundRow, StoredStatus, toChange, toRound, toWatchlist, Watchlist } from './watchlist-rows';

export type { ChangeRow, EntryRow, RoundRow, StoredStatus, Watchlist } from './watchlist-rows';

/** What stopping a running round left to refund: the charges of its entries never checked, at the round's price. */
export interface Unchecked {
  chargeIds: string[];
  cost: number;
  reason: 'WATCHLIST_DELETED' | 'WATCHLIST_PAUSED';
}

export interface NewEntry {
  phone: string;
  /** The number's keyed hash (src/common/keyed-hash.ts): what an erasure's tombstone names. */
  hash: string;
  reference: string | null;
}

const IDEMPOTENT_CREATION_INDEX = 'watchlists_idempotency_key_unique';
export const ERASED_CREATION_ANSWER = 'The watchlist of this Idempotency-Key was created, but its answer is no longer kept: list your watchlists to find it.';

const WATCHLIST_COLUMNS = `w.id, w.seq, w.account_id, w.name, w.interval, w.callback_url, w.status, w.round, w.round_running, w.next_check_at, w.created_at,
  w.watched AS total`;

/** The watchlists of accounts, their entries and changes, as the API reads and edits them. */
@Injectable()
export class WatchlistsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly txHost: TransactionHost<TypeOrmTx>,
  ) {}

  /**
   * The watchlist and its entries in one transaction, under a per-account lock so that concurrent
   * creations cannot together pass the plan's limit of watched numbers.
   */
  async create(
    watchlist: {
      id: string; accountId: string; name: string | null; interval: WatchInterval; callbackUrl: string | null; group: string; idempotencyKeyId: string | null;
      /** Its first round's due time: now, by the Clock. */
      nextCheckAt: Date;
    },
    entries: NewEntry[],
    /** The keyed hash of each rejected form the answer lists (src/common/number-hash.ts), null for a form holding no number. */
    rejectedHashes: Array<string | null>,
    maxWatched: number,
    /** `erased`: the indexes in `rejectedHashes` of forms of a number erased meanwhile, which the answer leaves out. */
    answer: (created: Watchlist, erased: ReadonlySet<number>) => object,
  ): Promise<string> {
    try {
      return await this.db.transaction(async (em) => {
        await numberWrites.guard(em);
        // A number erased since this transaction began is neither watched nor echoed (docs/privacy.md, "Erasure").
        const erased = await erasedOf(em, [...entries.map((entry) => entry.hash), ...rejectedHashes.flatMap((hash) => hash ?? [])]);
        entries = entries.filter((entry) => !erased.has(entry.hash));
        const erasedRejected = new Set(rejectedHashes.flatMap((hash, index) => (hash !== null && erased.has(hash) ? [index] : [])));
        const answerHashes = rejectedHashes.filter((hash, index): hash is string => hash !== null && !erasedRejected.has(index));
        await this.checkLimit(em, watchlist.accountId, entries.length, maxWatched);
        await em.query(
          `INSERT INTO watchlists (id, account_id, name, interval, callback_url, schedule_group, next_check_at, idempotency_key_id)
           VALUES ($1, $2, $3, $4, $5, $6, $8, $7)`,
          [watchlist.id, watchlist.accountId, watchlist.name, watchlist.interval, watchlist.callbackUrl, watchlist.group, watchlist.idempotencyKeyId, watchlist.nextCheckAt],
        );
        await this.insertEntries(em, watchlist.id, entries);
        const body = JSON.stringify(answer((await this.findIn(em, watchlist.accountId, watchlist.id))!, erasedRejected));
        await em.query(`UPDATE watchlists SET creation_answer = $2, creation_answer_hashes = $3 WHERE id = $1`, [watchlist.id, body, answerHashes]);
        return body;
      });
    } catch (error) {
      // Another attempt with the same key created it meanwhile: its answer is this one's.
      if (!watchlist.idempotencyKeyId || !isUniqueViolation(error, IDEMPOTENT_CREATION_INDEX)) throw error;
      const earlier = await this.creationAnswer(watchlist.idempotencyKeyId);
      // Its answer was cleared by an erasure (docs/privacy.md): the watchlist exists, its answer cannot be given again.
      if (earlier === undefined) throw error;
      if (earlier === null) throw new AppError('IDEMPOTENCY_CONFLICT', ERASED_CREATION_ANSWER);
      return earlier;
    }
  }

  /**
   * The creation answer of the watchlist created under an Idempotency-Key's id; undefined when none
   * was, null when one was but its answer is no longer kept (retention and erasure clear it).
   */
  async creationAnswer(idempotencyKeyId: string): Promise<string | null | undefined> {
    const rows: Array<{ creation_answer: string | null }> = await this.db.query(`SELECT creation_answer FROM watchlists WHERE idempotency_key_id = $1`, [idempotencyKeyId]);
    return rows[0]?.creation_answer;
  }

  find(accountId: string, id: string): Promise<Watchlist | undefined> {
    return this.findIn(this.db.manager, accountId, id);
  }

  async page(accountId: string, limit: number, beforeSeq: string | undefined): Promise<Watchlist[]> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      // An owner's page: the shape of src/common/keyset-page.ts, on watchlists_account_seq_idx.
      `SELECT ${WATCHLIST_COLUMNS} FROM watchlists w
        WHERE w.account_id = ANY(ARRAY[$1::uuid]) AND w.status <> 'deleted' AND w.seq < COALESCE($2::bigint, ${NO_KEY_ABOVE})
        ORDER BY w.account_id, w.seq DESC LIMIT $3`,
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
      // An owner's page: the shape of src/common/keyset-page.ts, on watchlist_entries_page_idx.
      `SELECT id, phone, reference, last_result, last_answered_by, last_error, checked_at FROM watchlist_entries
        WHERE watchlist_id = ANY(ARRAY[$1::uuid]) AND removed_at IS NULL AND id < COALESCE($2::bigint, ${NO_KEY_ABOVE})
        ORDER BY watchlist_id, id DESC LIMIT $3`,
      [watchlistId, beforeId ?? null, limit],
    );
    return rows.map((row) => ({
      id: String(row.id),
      phone: row.phone as string,
      reference: row.reference as string | null,
      result: row.last_result as ReportedAnswer | null,
      answeredBy: (row.last_answered_by as StoredProvenance | null) ?? null,
      error: row.last_error as string | null,
      checkedAt: row.checked_at as Date | null,
    }));
  }

  async changes(watchlistId: string, since: Date | undefined, limit: number, beforeId: string | undefined): Promise<ChangeRow[]> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      // An owner's page: the shape of src/common/keyset-page.ts, on watchlist_changes_list_idx.
      `SELECT c.id, c.phone, e.reference, c.field, c.before, c.after, c.answered_by, c.round, c.detected_at
         FROM watchlist_changes c JOIN watchlist_entries e ON e.id = c.entry_id
        WHERE c.watchlist_id = ANY(ARRAY[$1::uuid]) AND ($2::timestamptz IS NULL OR c.detected_at >= $2) AND c.id < COALESCE($3::bigint, ${NO_KEY_ABOVE})
        ORDER BY c.watchlist_id, c.id DESC LIMIT $4`,
      [watchlistId, since ?? null, beforeId ?? null, limit],
    );
    return rows.map(toChange);
  }

  /** The changes of one round, for its callback. */
  async changesOfRound(watchlistId: string, round: number): Promise<ChangeRow[]> {
    const rows: Array<Record<string, unknown>> = await this.txHost.tx.query(
      `SELECT c.id, c.phone, e.reference, c.field, c.before, c.after, c.answered_by, c.round, c.detected_at
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
    // In the transaction of WatchlistsService.update, with the retargeting of its pending callbacks.
    await joinedTransaction(this.txHost).query(
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
      await numberWrites.guard(em);
      // A number erased since this transaction began is not added (docs/privacy.md, "Erasure"; adding charges nothing).
      const erased = await erasedOf(em, entries.map((entry) => entry.hash));
      entries = entries.filter((entry) => !erased.has(entry.hash));
      // Counted under the account's lock: a concurrent edit cannot change what is already watched meanwhile.
      await lockAccount(em, accountId);
      await lockWatchlist(em, watchlistId);
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
    await this.db.transaction(async (em) => {
      await lockWatchlist(em, watchlistId);
      await em.query(`UPDATE watchlist_entries SET removed_at = now() WHERE watchlist_id = $1 AND phone = ANY($2::text[]) AND removed_at IS NULL`, [watchlistId, phones]);
    });
  }

  /**
   * Deleted watchlists are kept for the ledger's sake (their rounds' sources) but never shown or run
   * again. Entries charged for the running round and not checked in it are marked done and returned:
   * WatchlistsService refunds them in the same transaction (it opens it; no worker will check them).
   * A worker recording them at the same time waits for the row locks and then skips them. Undefined
   * when there is no such watchlist.
   */
  async markDeleted(accountId: string, id: string): Promise<Unchecked | undefined> {
    return this.stopRound(accountId, id, 'deleted');
  }

  /**
   * Pauses the watchlist (`paused`, by its owner) and, as a deletion does, answers the entries its
   * running round charged and had not checked, to refund: a paused round may never be resumed. On
   * resume the round finishes without them (they keep their last answer).
   */
  async pause(accountId: string, id: string): Promise<Unchecked | undefined> {
    return this.stopRound(accountId, id, 'paused');
  }

  private async stopRound(accountId: string, id: string, status: 'deleted' | 'paused'): Promise<Unchecked | undefined> {
    const em = joinedTransaction(this.txHost);
    const reason = status === 'deleted' ? 'WATCHLIST_DELETED' : 'WATCHLIST_PAUSED';
    const [lists]: [Array<{ round: number; round_running: boolean; round_cost: number | null }>] = await em.query(
      `UPDATE watchlists SET status = $3::text, deleted_at = CASE WHEN $3::text = 'deleted' THEN now() END
        WHERE account_id = $1 AND id = $2 AND status <> 'deleted' RETURNING round, round_running, round_cost`,
      [accountId, id, status],
    );
    const list = lists[0];
    if (!list) return undefined;
    if (!list.round_running) return { chargeIds: [], cost: 0, reason };
    const [unchecked]: [Array<{ charge_id: string }>] = await em.query(
      `UPDATE watchlist_entries SET checked_round = $2, last_error = $3, checked_at = now()
        WHERE watchlist_id = $1 AND charged_round = $2 AND checked_round < $2 RETURNING charge_id::text`,
      [id, list.round, reason],
    );
    return { chargeIds: unchecked.map((row) => row.charge_id), cost: Number(list.round_cost), reason };
  }

  private async findIn(em: EntityManager, accountId: string, id: string): Promise<Watchlist | undefined> {
    const rows: Array<Record<string, unknown>> = await em.query(
      `SELECT ${WATCHLIST_COLUMNS} FROM watchlists w WHERE w.account_id = $1 AND w.id = $2 AND w.status <> 'deleted'`,
      [accountId, id],
    );
    return rows[0] && toWatchlist(rows[0]);
  }

  private async checkLimit(em: EntityManager, accountId: string, adding: number, maxWatched: number): Promise<void> {
    await lockAccount(em, accountId);
    const [{ watched }] = await em.query(`SELECT COALESCE(sum(watched), 0) AS watched FROM watchlists WHERE account_id = $1 AND status <> 'deleted'`, [accountId]);
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

/**
 * The watchlist's row, before its entries: the trigger that keeps `watched` (migration 1764800000000)
 * updates it after the entries, and a round holds it (FOR SHARE) before writing entries, so taking it
 * first keeps one lock order and no deadlock.
 */
async function lockWatchlist(em: EntityManager, watchlistId: string): Promise<void> {
  await em.query(`SELECT 1 FROM watchlists WHERE id = $1 FOR NO KEY UPDATE`, [watchlistId]);
}

/** Which of these keyed hashes name a number erased since the transaction began (after `numberWrites.guard`). */
async function erasedOf(em: EntityManager, hashes: string[]): Promise<Set<string>> {
  if (hashes.length === 0) return new Set();
  const rows: Array<{ hash: string }> = await em.query(`SELECT hash FROM unnest($1::text[]) AS h(hash) WHERE ${erasedSince('h.hash')}`, [hashes]);
  return new Set(rows.map((row) => row.hash));
}

/** The account's watched-numbers lock, until the transaction ends (taking it again in it is free). */
async function lockAccount(em: EntityManager, accountId: string): Promise<void> {
  await em.query(`SELECT pg_advisory_xact_lock(hashtextextended('watchlists:' || $1, 0))`, [accountId]);
}
