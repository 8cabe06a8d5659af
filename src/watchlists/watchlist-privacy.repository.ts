import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { joinedTransaction, TransactionHost, type TypeOrmTx } from '../database/transactions';

/**
 * What watchlists/ keeps of phone numbers, and how it lets go of them (docs/privacy.md). Each retention
 * method is one statement touching at most `limit` rows, skipping rows another instance holds, and
 * answers the rows it touched (fewer than `limit`: nothing left for now).
 */
@Injectable()
export class WatchlistPrivacyRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly txHost: TransactionHost<TypeOrmTx>,
  ) {}

  /** Starts the retention clock of watchlists deleted by the version before deleted_at existed (a rolling upgrade). */
  async dateUndatedDeletions(limit: number, now: Date): Promise<number> {
    return this.count(
      `UPDATE watchlists SET deleted_at = $2 WHERE id IN (
         SELECT id FROM watchlists WHERE status = 'deleted' AND deleted_at IS NULL LIMIT $1 FOR UPDATE SKIP LOCKED)`,
      [limit, now],
    );
  }

  /** Changes of entries removed, or of watchlists deleted, before `before` (before their entries go). */
  async deleteChangesOfGoneEntries(before: Date, limit: number): Promise<number> {
    return this.count(
      `DELETE FROM watchlist_changes WHERE id IN (
         SELECT c.id FROM watchlist_changes c JOIN watchlist_entries e ON e.id = c.entry_id
          WHERE e.removed_at < $1
         UNION ALL
         SELECT c.id FROM watchlist_changes c JOIN watchlists w ON w.id = c.watchlist_id
          WHERE w.status = 'deleted' AND w.deleted_at < $1
         LIMIT $2)`,
      [before, limit],
    );
  }

  /** Entries removed, or of watchlists deleted, before `before` (their changes went first). */
  async deleteGoneEntries(before: Date, limit: number): Promise<number> {
    return this.count(
      `DELETE FROM watchlist_entries WHERE id IN (
         SELECT id FROM (
           SELECT e.id FROM watchlist_entries e WHERE e.removed_at < $1
           UNION ALL
           SELECT e.id FROM watchlist_entries e JOIN watchlists w ON w.id = e.watchlist_id
            WHERE w.status = 'deleted' AND w.deleted_at < $1
           LIMIT $2) due
         WHERE NOT EXISTS (SELECT 1 FROM watchlist_changes c WHERE c.entry_id = due.id))`,
      [before, limit],
    );
  }

  /** Changes detected before `before`, of any entry. */
  async deleteChangesBefore(before: Date, limit: number): Promise<number> {
    return this.count(
      `DELETE FROM watchlist_changes WHERE id IN (
         SELECT id FROM watchlist_changes WHERE detected_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [before, limit],
    );
  }

  /** Finished rounds started before `before` (their counts; no number). */
  async deleteRoundsBefore(before: Date, limit: number): Promise<number> {
    return this.count(
      `DELETE FROM watchlist_rounds WHERE ctid IN (
         SELECT ctid FROM watchlist_rounds WHERE started_at < $1 AND completed_at IS NOT NULL
          LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [before, limit],
    );
  }

  /**
   * The answer replayed to a retry of a watchlist's creation (it lists the rejected entries as sent):
   * needed only during its Idempotency-Key's life, cleared for watchlists created before `before`.
   */
  async clearCreationAnswersBefore(before: Date, limit: number): Promise<number> {
    return this.count(
      `UPDATE watchlists SET creation_answer = NULL, creation_answer_hashes = NULL WHERE id IN (
         SELECT id FROM watchlists WHERE creation_answer IS NOT NULL AND created_at < $1
          LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [before, limit],
    );
  }

  /**
   * Erasure of one number from every account's watchlists, in the transaction ErasureService opened
   * (which refunds the charges answered here in it): its changes and its entries go (it is no longer
   * watched), and a creation answer that lists it (a rejected form of it) is cleared. An entry a running
   * round charged and has not checked is refunded like one of a deleted watchlist: marked checked here
   * and its charge answered. The watchlists are locked first, in id order, as a round's writes hold
   * its watchlist before its entries: a round writing meanwhile either committed first (its answer or
   * refund stands, then the entry goes) or finds the entry gone and writes nothing.
   */
  async eraseNumber(e164: string, hashes: string[]): Promise<WatchlistErasure> {
    const em = joinedTransaction(this.txHost);
    // A creation answer written before its hashes were kept is matched as before, among those only (their partial index).
    const answerHolds = (hashes: string, digits: string) => `(creation_answer_hashes && ${hashes}::text[]
      OR (creation_answer IS NOT NULL AND creation_answer_hashes IS NULL AND regexp_replace(creation_answer, '[^0-9]', '', 'g') LIKE '%' || ${digits} || '%'))`;
    // Each part through its own index (an OR with a subquery would read every watchlist).
    await em.query(
      `SELECT id FROM watchlists
        WHERE id IN (SELECT watchlist_id FROM watchlist_entries WHERE phone = $1 UNION ALL SELECT id FROM watchlists WHERE ${answerHolds('$2', '$3')})
        ORDER BY id FOR NO KEY UPDATE`,
      [e164, hashes, e164.slice(1)],
    );
    // Answered in the order the refunds lock their accounts: account id, then charge id. Two erasures
    // refunding in whatever order the statement returns rows could each hold one account the other
    // waits for (a deadlock, 40P01); in one order, the second waits for the first and then goes on.
    const unchecked: Array<{ charge_id: string; cost: number }> = await em.query(
      `WITH marked AS (
         UPDATE watchlist_entries e SET checked_round = w.round, last_error = 'NUMBER_ERASED', checked_at = now()
           FROM watchlists w
          WHERE e.watchlist_id = w.id AND e.phone = $1 AND w.round_running AND e.charged_round = w.round AND e.checked_round < w.round
          RETURNING w.account_id, e.charge_id, w.round_cost AS cost)
       SELECT charge_id::text, cost FROM marked ORDER BY account_id, charge_id`,
      [e164],
    );
    const [changes]: [unknown[], number] = await em.query(
      `DELETE FROM watchlist_changes WHERE id IN (
         SELECT id FROM watchlist_changes WHERE phone = $1
         UNION SELECT c.id FROM watchlist_changes c JOIN watchlist_entries e ON e.id = c.entry_id WHERE e.phone = $1) RETURNING 1`,
      [e164],
    );
    const [entries]: [unknown[], number] = await em.query(`DELETE FROM watchlist_entries WHERE phone = $1 RETURNING 1`, [e164]);
    const [answers]: [Array<{ idempotency_key_id: string | null }>] = await em.query(
      `UPDATE watchlists SET creation_answer = NULL, creation_answer_hashes = NULL WHERE ${answerHolds('$1', '$2')} RETURNING idempotency_key_id::text`,
      [hashes, e164.slice(1)],
    );
    return {
      entries: entries.length,
      changes: changes.length,
      unchecked: unchecked.map((row) => ({ chargeId: row.charge_id, cost: Number(row.cost) })),
      answerKeys: answers.flatMap((row) => row.idempotency_key_id ?? []),
    };
  }

  private async count(statement: string, parameters: unknown[]): Promise<number> {
    const rows: Array<{ n: number }> = await this.db.query(`WITH touched AS (${statement} RETURNING 1) SELECT count(*)::int AS n FROM touched`, parameters);
    return rows[0].n;
  }
}

/** What an erasure did to the watchlists, and what its caller finishes in the same transaction or after. */
export interface WatchlistErasure {
  entries: number;
  changes: number;
  /**
   * Charges of running rounds that will never check the number: the caller refunds them in the same
   * transaction, in this order (account id, then charge id), so that erasures lock accounts in one order.
   */
  unchecked: Array<{ chargeId: string; cost: number }>;
  /** The Idempotency-Keys of the creations whose answers listed the number (their stored answers hold it too). */
  answerKeys: string[];
}
