import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a keyed call was charged for (for /filter: its enabled checks), stored with the key when it is
 * claimed: a retry answered again without a charge (its first attempt settled, its answer not stored
 * yet) is answered for exactly that, not for the account's checks of the moment (review finding #15).
 * Null for keys claimed before this migration: those retries use the current checks, as before.
 */
export class IdempotencyAnswerContext1764900000000 implements MigrationInterface {
  name = 'IdempotencyAnswerContext1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE idempotency_keys ADD COLUMN answer_context jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE idempotency_keys DROP COLUMN answer_context`);
  }
}
