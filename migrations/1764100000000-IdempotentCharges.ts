import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An Idempotency-Key is charged at most once, by the database: each key gets an id for its 24 h
 * life (a new one only when an expired key is used again), the CHARGE of a call made with the key
 * carries that id, and a partial unique index allows one charge per id. The refund of a charge
 * clears the id in the same statement, so a refunded call may be charged again; nothing else does.
 * `claimed_at` is when the current attempt took the key (a retry may take over a key whose attempt
 * died before charging), while `created_at` stays the start of the key's life.
 *
 * Answers are kept as the bytes first sent: the stored answer of a key as text (jsonb reorders
 * keys), and bulk answers as json (kept verbatim, key order included). Rows written before this
 * migration keep the order jsonb gave them.
 */
export class IdempotentCharges1764100000000 implements MigrationInterface {
  name = 'IdempotentCharges1764100000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE idempotency_keys ADD COLUMN id uuid NOT NULL DEFAULT gen_random_uuid()`);
    await q.query(`ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_id_unique UNIQUE (id)`);
    await q.query(`ALTER TABLE idempotency_keys ADD COLUMN claimed_at timestamptz NOT NULL DEFAULT now()`);
    await q.query(`UPDATE idempotency_keys SET claimed_at = created_at`);
    await q.query(`ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE text USING response_body::text`);

    await q.query(`ALTER TABLE ledger_entries ADD COLUMN idempotency_key_id uuid`);
    await q.query(`
      ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_idempotency_key_on_charges
        CHECK (idempotency_key_id IS NULL OR type = 'CHARGE')`);
    await q.query(`
      CREATE UNIQUE INDEX ledger_entries_idempotency_key_unique ON ledger_entries (idempotency_key_id)
      WHERE idempotency_key_id IS NOT NULL`);

    await q.query(`ALTER TABLE bulk_entries ALTER COLUMN result TYPE json USING result::json`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE bulk_entries ALTER COLUMN result TYPE jsonb USING result::jsonb`);
    await q.query(`DROP INDEX ledger_entries_idempotency_key_unique`);
    await q.query(`ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_idempotency_key_on_charges`);
    await q.query(`ALTER TABLE ledger_entries DROP COLUMN idempotency_key_id`);
    await q.query(`ALTER TABLE idempotency_keys ALTER COLUMN response_body TYPE jsonb USING response_body::jsonb`);
    await q.query(`ALTER TABLE idempotency_keys DROP COLUMN claimed_at`);
    await q.query(`ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_id_unique`);
    await q.query(`ALTER TABLE idempotency_keys DROP COLUMN id`);
  }
}
