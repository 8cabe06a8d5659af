import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Account } from './account.entity';
import { Plan } from './plan.entity';

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
