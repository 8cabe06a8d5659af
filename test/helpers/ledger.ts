import { DataSource } from 'typeorm';
import { eventually } from './eventually';

export interface LedgerState {
  balance: number;
  ledgerSum: number;
  byType: Record<string, number>;
  unsettledCharges: number;
}

/**
 * The account as the database has it: balance, the sum of its ledger, and its rows by type.
 * Answered calls are marked settled in batches within ~20 ms; by default this waits (up to 2 s)
 * for them, so that an unsettled charge it reports is one whose call really never answered.
 */
export async function ledgerState(db: DataSource, accountId: string, options: { waitForSettlement?: boolean } = {}): Promise<LedgerState> {
  if (options.waitForSettlement === false) return readLedgerState(db, accountId);
  return eventually(() => readLedgerState(db, accountId), (state) => state.unsettledCharges === 0, 2000, 25);
}

async function readLedgerState(db: DataSource, accountId: string): Promise<LedgerState> {
  // One statement, so the balance and the rows are of the same moment even while charges land.
  const rows: Array<{ balance: string; type: string | null; count: string; sum: string; unsettled: string }> = await db.query(
    `SELECT a.balance, l.type, count(l.id) AS count, COALESCE(SUM(l.amount), 0) AS sum,
            count(*) FILTER (WHERE l.type = 'CHARGE' AND l.settled_at IS NULL) AS unsettled
       FROM accounts a LEFT JOIN ledger_entries l ON l.account_id = a.id
      WHERE a.id = $1 GROUP BY a.balance, l.type`,
    [accountId],
  );
  const typed = rows.filter((row) => row.type !== null);
  return {
    balance: Number(rows[0].balance),
    ledgerSum: typed.reduce((sum, row) => sum + Number(row.sum), 0),
    byType: Object.fromEntries(typed.map((row) => [row.type, Number(row.count)])),
    unsettledCharges: typed.reduce((sum, row) => sum + Number(row.unsettled), 0),
  };
}
