import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Closes three races of the Idempotency-Key and refund paths (src/idempotency/idempotency.repository.ts,
 * src/credits/credits.repository.ts):
 *
 * - `idempotency_keys.attempt`: each attempt at a key (its claim, or a retry's take-over) gets its own
 *   token, and only that attempt may free the key. A slow attempt that fails after a retry took the
 *   key over can no longer delete the key the retry is charging. Keys stored before this migration
 *   have none, and a retry never takes those over: they answer 409 until their 24 h end (their first
 *   attempt may have been charged under the older scheme, where a charge did not name its key).
 * - A charge names an existing key (foreign key): a key with a charge cannot be deleted, whatever the
 *   timing. When an expired key is used again it gets a new id, and its old charge stops naming it
 *   (ON UPDATE SET NULL), so the old charge does not count against the new call.
 * - `ledger_entries.answered_at`: a retry answered a charged call again without a new charge; from
 *   then on no late give-back may refund that charge.
 */
export class ChargeAttempts1764100000100 implements MigrationInterface {
  name = 'ChargeAttempts1764100000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE idempotency_keys ADD COLUMN attempt uuid`);
    await q.query(`ALTER TABLE ledger_entries ADD COLUMN answered_at timestamptz`);
    // A charge naming no stored key protects nothing (no key can be answered from it): let it name none.
    await q.query(`
      UPDATE ledger_entries l SET idempotency_key_id = NULL
       WHERE l.idempotency_key_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.id = l.idempotency_key_id)`);
    await q.query(`
      ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_idempotency_key_fk
        FOREIGN KEY (idempotency_key_id) REFERENCES idempotency_keys (id) ON UPDATE SET NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_idempotency_key_fk`);
    await q.query(`ALTER TABLE ledger_entries DROP COLUMN answered_at`);
    await q.query(`ALTER TABLE idempotency_keys DROP COLUMN attempt`);
  }
}
