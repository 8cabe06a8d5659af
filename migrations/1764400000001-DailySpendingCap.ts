import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The daily spending cap (account_settings.daily_credit_limit) counts today's charges on the account
 * row itself: every charge statement locks that row anyway, so it reads the latest count under the
 * lock and moves it in the same statement as the balance (credits.repository). `spent_day` is the UTC
 * day `spent_today` counts; a charge on another day starts from zero. Refunds of a charge made that
 * day give the allowance back.
 */
export class DailySpendingCap1764400000001 implements MigrationInterface {
  name = 'DailySpendingCap1764400000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE accounts
        ADD COLUMN spent_day   date,
        ADD COLUMN spent_today bigint NOT NULL DEFAULT 0 CONSTRAINT accounts_spent_today_not_negative CHECK (spent_today >= 0)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE accounts DROP COLUMN spent_today, DROP COLUMN spent_day`);
  }
}
