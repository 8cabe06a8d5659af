import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The risk verdict (POST /api/v1/risk, docs/sms-pumping.md):
 * - `account_settings.risk_settings`: an account's thresholds and destination adjustments (only what it
 *   set; the defaults live in src/settings/risk-settings.ts). A constant default: no row is rewritten.
 * - `risk_feedback`: whether the OTP sent after a verdict was verified (POST /api/v1/risk/feedback), one
 *   row per verdict it is about. The number is kept as its keyed hash (DATA_HASH_KEY), never in clear;
 *   rows go after RETENTION_RISK_FEEDBACK_DAYS and on erasure (docs/privacy.md). Both times are the
 *   service's Clock's, so retention can be proven by moving a clock.
 */
export class RiskVerdicts1765500000000 implements MigrationInterface {
  name = 'RiskVerdicts1765500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`SET LOCAL lock_timeout = '5s'`);
    await q.query(`ALTER TABLE account_settings ADD COLUMN risk_settings jsonb NOT NULL DEFAULT '{}'::jsonb`);
    await q.query(`
      CREATE TABLE risk_feedback (
        id          bigserial PRIMARY KEY,
        account_id  uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        phone_hash  text NOT NULL,
        asked_at    timestamptz NOT NULL,
        verified    boolean NOT NULL,
        created_at  timestamptz NOT NULL,
        CONSTRAINT risk_feedback_one_per_verdict UNIQUE (account_id, phone_hash, asked_at)
      )`);
    await q.query(`CREATE INDEX risk_feedback_created_at ON risk_feedback (created_at)`);
    await q.query(`CREATE INDEX risk_feedback_phone_hash ON risk_feedback (phone_hash)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE risk_feedback`);
    await q.query(`ALTER TABLE account_settings DROP COLUMN risk_settings`);
  }
}
