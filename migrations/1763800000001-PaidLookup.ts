import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency keys for POST /api/v1/filter: a retry with the same key and body within 24 h gets the
 * first response again and is not charged again (docs/api.md).
 */
export class PaidLookup1763800000001 implements MigrationInterface {
  name = 'PaidLookup1763800000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE idempotency_keys (
        account_id       uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        key              varchar(255) NOT NULL,
        request_hash     char(64) NOT NULL,
        status           varchar(12) NOT NULL CHECK (status IN ('in_progress', 'completed')),
        response_status  integer,
        response_body    jsonb,
        created_at       timestamptz NOT NULL DEFAULT now(),
        completed_at     timestamptz,
        PRIMARY KEY (account_id, key)
      )`);
    await q.query(`CREATE INDEX idempotency_keys_created_at_idx ON idempotency_keys (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE idempotency_keys`);
  }
}
