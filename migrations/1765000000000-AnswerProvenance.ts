import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Where each answer came from (issue 23, provenance): per check, the provider that answered and when it
 * observed the number, compact (`{ "<check>": ["<provider>", "<observedAt>"] }`, src/checks/provenance.ts).
 * On a /filter CHARGE row (written with its settle, or with a charge settled at once; null when refunded
 * or nothing was asked), a bulk entry's answer, a watchlist entry's last answer, and a watchlist change
 * (the pair of the check that produced the changed field). Nullable, no default: adding them rewrites no row.
 * json, not jsonb: kept as written, 14 bytes a check smaller (62 bytes on a ledger row for one check, 76 as jsonb).
 */
export class AnswerProvenance1765000000000 implements MigrationInterface {
  name = 'AnswerProvenance1765000000000';

  /**
   * Each ALTER waits at most 5 s for its table's lock (a long reader: a backup, a report), then the
   * migration fails and changes nothing (start it again later) rather than queueing every call behind
   * it; the ledger, which every paid call writes, is altered last so its lock is held only for its
   * own instant, never while the others wait.
   */
  async up(q: QueryRunner): Promise<void> {
    await q.query(`SET LOCAL lock_timeout = '5s'`);
    await q.query(`ALTER TABLE bulk_entries ADD COLUMN answered_by json`);
    await q.query(`ALTER TABLE watchlist_entries ADD COLUMN last_answered_by json`);
    await q.query(`ALTER TABLE watchlist_changes ADD COLUMN answered_by json`);
    await q.query(`ALTER TABLE ledger_entries ADD COLUMN answered_by json`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE watchlist_changes DROP COLUMN answered_by`);
    await q.query(`ALTER TABLE watchlist_entries DROP COLUMN last_answered_by`);
    await q.query(`ALTER TABLE bulk_entries DROP COLUMN answered_by`);
    await q.query(`ALTER TABLE ledger_entries DROP COLUMN answered_by`);
  }
}
