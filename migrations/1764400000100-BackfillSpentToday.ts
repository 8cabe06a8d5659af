import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * 1764400000001 added the daily cap's counter (accounts.spent_today / spent_day) at zero, so what an
 * account was charged earlier on the day it was deployed did not count. This sets it from today's
 * (UTC) ledger, with the rule the charge statements follow (src/credits/credits.repository.ts): every
 * CHARGE of today, less the REFUND of each of them (a refund of another day's charge gives nothing
 * back today). Never lowered: a charge committed while this runs is already counted on the row, and
 * the larger count is kept. Accounts charged nothing today are left as they are.
 */
export class BackfillSpentToday1764400000100 implements MigrationInterface {
  name = 'BackfillSpentToday1764400000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      WITH today AS (SELECT (now() AT TIME ZONE 'UTC')::date AS day),
      spent AS (
        SELECT c.account_id, sum(-c.amount - COALESCE(r.amount, 0)) AS amount
          FROM ledger_entries c
          LEFT JOIN ledger_entries r ON r.refund_of = c.id AND r.type = 'REFUND'
         WHERE c.type = 'CHARGE' AND c.created_at >= (SELECT day FROM today)::timestamp AT TIME ZONE 'UTC'
         GROUP BY c.account_id)
      UPDATE accounts a
         SET spent_today = greatest(spent.amount, CASE WHEN a.spent_day >= today.day THEN a.spent_today ELSE 0 END),
             spent_day = greatest(a.spent_day, today.day)
        FROM spent, today
       WHERE a.id = spent.account_id AND spent.amount > 0`);
  }

  async down(): Promise<void> {
    // Nothing to undo: the counter keeps its meaning without this backfill.
  }
}
