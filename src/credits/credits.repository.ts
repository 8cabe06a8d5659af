import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export interface LedgerWrite {
  id: string;
  balanceAfter: number;
}

/**
 * Every change of a balance, as ONE statement that moves accounts.balance and appends the ledger
 * row together: atomic without an explicit transaction, and it cannot overdraw (the WHERE clause
 * and the CHECK constraint) nor be written twice (the unique reference).
 */
@Injectable()
export class CreditsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** TOPUP (+) or ADJUSTMENT (±). Undefined when the account is missing or would go below zero. */
  async credit(
    accountId: string,
    type: 'TOPUP' | 'ADJUSTMENT',
    amount: number,
    details: { reference: string; reason: string | null; actor: string | null },
  ): Promise<LedgerWrite | undefined> {
    const rows: Array<{ id: string; balance_after: string }> = await this.db.query(
      `WITH moved AS (
         UPDATE accounts SET balance = balance + $2 WHERE id = $1 AND balance + $2 >= 0 RETURNING id, balance)
       INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, reason, actor, settled_at)
       SELECT id, $3, $2, balance, $4, $5, $6, now() FROM moved
       RETURNING id, balance_after`,
      [accountId, amount, type, details.reference, details.reason, details.actor],
    );
    return rows[0] && { id: rows[0].id, balanceAfter: Number(rows[0].balance_after) };
  }

  async balance(accountId: string): Promise<number | undefined> {
    const rows: Array<{ balance: string }> = await this.db.query(`SELECT balance FROM accounts WHERE id = $1`, [accountId]);
    return rows[0] && Number(rows[0].balance);
  }

  /** The invariant the whole design protects: balance = sum of the ledger. */
  async ledgerSum(accountId: string): Promise<number> {
    const rows: Array<{ sum: string }> = await this.db.query(
      `SELECT COALESCE(SUM(amount), 0) AS sum FROM ledger_entries WHERE account_id = $1`,
      [accountId],
    );
    return Number(rows[0].sum);
  }
}
