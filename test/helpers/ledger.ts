import { DataSource } from 'typeorm';

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
  const deadline = Date.now() + 2000;
  for (;;) {
    const state = await readLedgerState(db, accountId);
    if (options.waitForSettlement === false || state.unsettledCharges === 0 || Date.now() > deadline) return state;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function readLedgerState(db: DataSource, accountId: string): Promise<LedgerState> {
  const [account] = await db.query(`SELECT balance FROM accounts WHERE id = $1`, [accountId]);
  const rows: Array<{ type: string; count: string; sum: string; unsettled: string }> = await db.query(
    `SELECT type, count(*) AS count, COALESCE(SUM(amount), 0) AS sum,
            count(*) FILTER (WHERE type = 'CHARGE' AND settled_at IS NULL) AS unsettled
       FROM ledger_entries WHERE account_id = $1 GROUP BY type`,
    [accountId],
  );
  return {
    balance: Number(account.balance),
    ledgerSum: rows.reduce((sum, row) => sum + Number(row.sum), 0),
    byType: Object.fromEntries(rows.map((row) => [row.type, Number(row.count)])),
    unsettledCharges: rows.reduce((sum, row) => sum + Number(row.unsettled), 0),
  };
}
