import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Erasure tombstones (docs/privacy.md, "Erasure"): one row per erasure and keyed hash of the number (its
 * own and its national readings', src/common/number-hash.ts), written by the erasure before it deletes
 * anything (`erased_at` NULL while it runs, the database's time once it is complete). Every insert of a
 * number-bearing row reads it in its own transaction, under the shared erasure lock
 * (src/erasures/number-erasures.ts): a write whose transaction began before the erasure completed
 * never lands the number. An erasure completes only its own rows: a second erasure of the number, begun
 * before the first completed, keeps the number refused until it completes itself. Rows go 24 h after
 * their erasure (the retention run): far past the hour a writer's transaction may be old when it checks.
 */
export class NumberErasureTombstones1795885078578 implements MigrationInterface {
  name = 'NumberErasureTombstones1795885078578';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE number_erasures (
      phone_hash text NOT NULL,
      erasure_id uuid NOT NULL,
      started_at timestamptz NOT NULL,
      erased_at timestamptz,
      PRIMARY KEY (phone_hash, erasure_id),
      CONSTRAINT number_erasures_erased_after_start CHECK (erased_at IS NULL OR erased_at >= started_at)
    )`);
    await q.query(`CREATE INDEX number_erasures_age_idx ON number_erasures ((COALESCE(erased_at, started_at)))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE number_erasures`);
  }
}
