import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';
import { Account } from './account.entity';
import { Plan } from './plan.entity';

export interface AccountFilter {
  name?: string;
  plan?: string;
  disabled?: boolean;
  balanceBelow?: number;
}

@Injectable()
export class AccountsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly txHost: TransactionHost<TypeOrmTx>,
  ) {}

  /** The account, in the transaction AdminService opened (its settings, credits and key commit with it). */
  async create(name: string, plan: string): Promise<Account> {
    const em = this.txHost.tx;
    return em.save(em.create(Account, { name, plan, balance: 0, disabled: false }));
  }

  /** What authentication needs of a caller's account: disabled or not, and its plan's rate limit. */
  async callerState(id: string): Promise<{ disabled: boolean; plan: { name: string; limit: number; windowSeconds: number } } | undefined> {
    const rows: Array<{ disabled: boolean; name: string; limit: number; window_seconds: number }> = await this.db.query(
      `SELECT a.disabled, p.name, p."limit", p.window_seconds FROM accounts a JOIN plans p ON p.name = a.plan WHERE a.id = $1`,
      [id],
    );
    const row = rows[0];
    return row && { disabled: row.disabled, plan: { name: row.name, limit: Number(row.limit), windowSeconds: Number(row.window_seconds) } };
  }

  findById(id: string): Promise<Account | null> {
    return this.txHost.tx.getRepository(Account).findOneBy({ id });
  }

  /**
   * The admin's listing: newest first, keyset-paged on seq, filtered by a case-insensitive name
   * substring, plan, disabled, and a balance below a bound.
   */
  async page(filter: AccountFilter, limit: number, beforeSeq: string | undefined): Promise<Array<Account & { seq: string }>> {
    const rows: Array<{ id: string; seq: string; name: string; plan: string; balance: string; disabled: boolean; created_at: Date }> = await this.db.query(
      `SELECT id, seq, name, plan, balance, disabled, created_at FROM accounts
        WHERE ($1::bigint IS NULL OR seq < $1::bigint)
          AND ($2::text IS NULL OR strpos(lower(name), lower($2::text)) > 0)
          AND ($3::text IS NULL OR plan = $3::text)
          AND ($4::boolean IS NULL OR disabled = $4::boolean)
          AND ($5::bigint IS NULL OR balance < $5::bigint)
        ORDER BY seq DESC LIMIT $6`,
      [beforeSeq ?? null, filter.name ?? null, filter.plan ?? null, filter.disabled ?? null, filter.balanceBelow ?? null, limit],
    );
    return rows.map((row) =>
      Object.assign(new Account(), {
        id: row.id,
        seq: String(row.seq),
        name: row.name,
        plan: row.plan,
        balance: Number(row.balance),
        disabled: row.disabled,
        createdAt: row.created_at,
      }),
    );
  }

  count(): Promise<number> {
    return this.txHost.tx.getRepository(Account).count();
  }

  async setPlan(id: string, plan: string): Promise<void> {
    await this.txHost.tx.getRepository(Account).update({ id }, { plan });
  }

  async setDisabled(id: string, disabled: boolean): Promise<void> {
    await this.txHost.tx.getRepository(Account).update({ id }, { disabled });
  }

  findPlan(name: string): Promise<Plan | null> {
    return this.txHost.tx.getRepository(Plan).findOneBy({ name });
  }

  listPlans(): Promise<Plan[]> {
    return this.txHost.tx.getRepository(Plan).find({ order: { limit: 'ASC' } });
  }

  async updatePlan(name: string, limit: number, windowSeconds: number, maxWatchedNumbers?: number): Promise<Plan | null> {
    await this.txHost.tx.getRepository(Plan).update({ name }, { limit, windowSeconds, ...(maxWatchedNumbers === undefined ? {} : { maxWatchedNumbers }) });
    return this.findPlan(name);
  }
}
