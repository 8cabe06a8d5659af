import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Retention and erasure of phone numbers (docs/privacy.md).
 *
 * - `ledger_entries_idempotency_key_fk` gets ON DELETE SET NULL: an Idempotency-Key row can be deleted
 *   once its life is over (the ledger keeps the charge, amounts and reference; the charge just stops
 *   naming a key nobody can use any more). Deleting a key row is only ever done past its 24 h life
 *   (retention), by an erasure past its life, or by `release`, which locks the row first so that a
 *   charge committed meanwhile is seen (src/idempotency/idempotency.repository.ts). Inserting a charge
 *   that names a missing key still fails. The partial unique index still allows one charge per key id.
 * - `idempotency_keys.phone_hash`: the keyed hash of the number a /filter key was used for, so an
 *   erasure finds the keys of one number (their request_hash also covers the source).
 * - `bulk_jobs.entries_deleted_at`: the job's entries are gone (retention, or the customer's DELETE);
 *   its counts and charges stay.
 * - `watchlists.deleted_at`: when a watchlist was deleted (the clock of its retention). Watchlists
 *   deleted before this migration start their clock now; one deleted by an instance of the version
 *   before during a rolling upgrade gets it from the next retention run (no constraint ties it to the
 *   status, so that version's deletes keep working).
 * - Indexes that keep each retention batch an index range, not a scan of the table.
 */
export class PersonalDataRetention1764700000000 implements MigrationInterface {
  name = 'PersonalDataRetention1764700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_idempotency_key_fk`);
    await q.query(`
      ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_idempotency_key_fk
        FOREIGN KEY (idempotency_key_id) REFERENCES idempotency_keys (id) ON UPDATE SET NULL ON DELETE SET NULL`);
    await q.query(`ALTER TABLE idempotency_keys ADD COLUMN phone_hash char(64)`);
    await q.query(`CREATE INDEX idempotency_keys_phone_hash_idx ON idempotency_keys (phone_hash) WHERE phone_hash IS NOT NULL`);

    await q.query(`ALTER TABLE bulk_jobs ADD COLUMN entries_deleted_at timestamptz`);
    await q.query(`CREATE INDEX bulk_jobs_entries_kept_idx ON bulk_jobs (completed_at) WHERE status = 'completed' AND entries_deleted_at IS NULL`);

    await q.query(`ALTER TABLE watchlists ADD COLUMN deleted_at timestamptz`);
    await q.query(`UPDATE watchlists SET deleted_at = now() WHERE status = 'deleted'`);
    await q.query(`CREATE INDEX watchlists_deleted_at_idx ON watchlists (deleted_at) WHERE status = 'deleted'`);
    await q.query(`CREATE INDEX watchlists_creation_answer_idx ON watchlists (created_at) WHERE creation_answer IS NOT NULL`);
    await q.query(`CREATE INDEX watchlist_entries_removed_at_idx ON watchlist_entries (removed_at) WHERE removed_at IS NOT NULL`);
    await q.query(`CREATE INDEX watchlist_changes_detected_at_idx ON watchlist_changes (detected_at)`);
    await q.query(`CREATE INDEX watchlist_rounds_started_at_idx ON watchlist_rounds (started_at)`);

    await q.query(`CREATE INDEX ledger_entries_unmasked_phone_idx ON ledger_entries (created_at) WHERE phone IS NOT NULL AND phone NOT LIKE '%*'`);
    await q.query(`CREATE INDEX admin_audit_created_at_idx ON admin_audit (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX admin_audit_created_at_idx`);
    await q.query(`DROP INDEX ledger_entries_unmasked_phone_idx`);
    await q.query(`DROP INDEX watchlist_rounds_started_at_idx`);
    await q.query(`DROP INDEX watchlist_changes_detected_at_idx`);
    await q.query(`DROP INDEX watchlist_entries_removed_at_idx`);
    await q.query(`DROP INDEX watchlists_creation_answer_idx`);
    await q.query(`DROP INDEX watchlists_deleted_at_idx`);
    await q.query(`ALTER TABLE watchlists DROP COLUMN deleted_at`);
    await q.query(`DROP INDEX bulk_jobs_entries_kept_idx`);
    await q.query(`ALTER TABLE bulk_jobs DROP COLUMN entries_deleted_at`);
    await q.query(`DROP INDEX idempotency_keys_phone_hash_idx`);
    await q.query(`ALTER TABLE idempotency_keys DROP COLUMN phone_hash`);
    await q.query(`ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_idempotency_key_fk`);
    // Keys deleted meanwhile left charges naming nothing: the restored constraint would refuse them.
    await q.query(`
      UPDATE ledger_entries l SET idempotency_key_id = NULL
       WHERE l.idempotency_key_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.id = l.idempotency_key_id)`);
    await q.query(`
      ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_idempotency_key_fk
        FOREIGN KEY (idempotency_key_id) REFERENCES idempotency_keys (id) ON UPDATE SET NULL`);
  }
}
