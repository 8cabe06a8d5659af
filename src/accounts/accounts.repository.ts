import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
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
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The account and what `within` writes for it (its default settings), in one transaction. */
  async create(name: string, plan: string, within: (transaction: EntityManager, accountId: string) => Promise<void>): Promise<Account> {
    return this.db.transaction(async (em) => {
      const account = await em.save(em.create(Account, { name, plan, balance: 0, disabled: false }));
      await within(em, account.id);
      return account;
    });
  }

  findById(id: string): Promise<Account | null> {
    return this.db.getRepository(Account).findOneBy({ id });
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
    return this.db.getRepository(Account).count();
  }

  async setPlan(id: string, plan: string): Promise<void> {
    await this.db.getRepository(Account).update({ id }, { plan });
  }

  async setDisabled(id: string, disabled: boolean): Promise<void> {
    await this.db.getRepository(Account).update({ id }, { disabled });
  }

  findPlan(name: string): Promise<Plan | null> {
    return this.db.getRepository(Plan).findOneBy({ name });
  }

  listPlans(): Promise<Plan[]> {
    return this.db.getRepository(Plan).find({ order: { limit: 'ASC' } });
  }

  async updatePlan(name: string, limit: number, windowSeconds: number, maxWatchedNumbers?: number): Promise<Plan | null> {
    await this.db.getRepository(Plan).update({ name }, { limit, windowSeconds, ...(maxWatchedNumbers === undefined ? {} : { maxWatchedNumbers }) });
    return this.findPlan(name);
  }
}
