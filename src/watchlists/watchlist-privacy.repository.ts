import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/**
 * What watchlists/ keeps of phone numbers, and how it lets go of them (docs/privacy.md). Each retention
 * method is one statement touching at most `limit` rows, skipping rows another instance holds, and
 * answers the rows it touched (fewer than `limit`: nothing left for now).
 */
@Injectable()
export class WatchlistPrivacyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

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
      `UPDATE watchlists SET creation_answer = NULL WHERE id IN (
         SELECT id FROM watchlists WHERE creation_answer IS NOT NULL AND created_at < $1
          LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [before, limit],
    );
  }

  /**
   * Erasure of one number from every account's watchlists: its changes and its entries go (it is no
   * longer watched), and a creation answer that lists it (a rejected form of it) is cleared.
   */
  async eraseNumber(e164: string): Promise<{ entries: number; changes: number }> {
    return this.db.transaction(async (em) => {
      const digits = e164.slice(1);
      const [changes]: [unknown[], number] = await em.query(
        `DELETE FROM watchlist_changes WHERE phone = $1
            OR entry_id IN (SELECT id FROM watchlist_entries WHERE regexp_replace(phone, '[^0-9]', '', 'g') ~ ('^(00)?' || $2 || '$')) RETURNING 1`,
        [e164, digits],
      );
      const [entries]: [unknown[], number] = await em.query(
        `DELETE FROM watchlist_entries WHERE regexp_replace(phone, '[^0-9]', '', 'g') ~ ('^(00)?' || $1 || '$') RETURNING 1`,
        [digits],
      );
      await em.query(
        `UPDATE watchlists SET creation_answer = NULL
          WHERE creation_answer IS NOT NULL AND regexp_replace(creation_answer, '[^0-9]', '', 'g') LIKE '%' || $1 || '%'`,
        [digits],
      );
      return { entries: entries.length, changes: changes.length };
    });
  }

  private async count(statement: string, parameters: unknown[]): Promise<number> {
    const rows: Array<{ n: number }> = await this.db.query(`WITH touched AS (${statement} RETURNING 1) SELECT count(*)::int AS n FROM touched`, parameters);
    return rows[0].n;
  }
}
