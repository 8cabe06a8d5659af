import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The admin audit trail: one row per admin action (HTTP or CLI), with the state before and after.
 * Append-only; read newest first (by id), optionally for one target.
 */
export class AdminAudit1763800000002 implements MigrationInterface {
  name = 'AdminAudit1763800000002';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE admin_audit (
        id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        actor        varchar(200) NOT NULL,
        action       varchar(64) NOT NULL,
        target_type  varchar(32) NOT NULL,
        target_id    varchar(128) NOT NULL,
        before       jsonb,
        after        jsonb,
        request_id   varchar(128),
        created_at   timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX admin_audit_target_id_idx ON admin_audit (target_id, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE admin_audit`);
  }
}
