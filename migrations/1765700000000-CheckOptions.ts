import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Per-account options of checks (the SIM swap check's window, docs/api.md "SIM swap"): one jsonb
 * `account_settings.check_options`, `{ <check>: { <option>: value } }`, holding only what the account
 * set (the defaults and bounds are each check's definition's, src/checks/), instead of a column per
 * check. A constant default: no row is rewritten. The object shape is held by a constraint.
 */
export class CheckOptions1765700000000 implements MigrationInterface {
  name = 'CheckOptions1765700000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`SET LOCAL lock_timeout = '5s'`);
    await q.query(`ALTER TABLE account_settings ADD COLUMN check_options jsonb NOT NULL DEFAULT '{}'::jsonb`);
    await q.query(`ALTER TABLE account_settings ADD CONSTRAINT account_settings_check_options_object CHECK (jsonb_typeof(check_options) = 'object') NOT VALID`);
    await q.query(`ALTER TABLE account_settings VALIDATE CONSTRAINT account_settings_check_options_object`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE account_settings DROP COLUMN check_options`);
  }
}
