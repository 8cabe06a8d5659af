import { Injectable } from '@nestjs/common';
import { AppError } from '../common/errors';
import { Account } from './account.entity';
import { AccountFilter, AccountsRepository } from './accounts.repository';
import { Plan } from './plan.entity';

@Injectable()
export class AccountsService {
  constructor(private readonly accounts: AccountsRepository) {}

  /** The guard's question about a caller's account (auth/ asks it on a cache miss): disabled, and its plan's limit. */
  callerState(accountId: string): Promise<{ disabled: boolean; plan: { name: string; limit: number; windowSeconds: number } } | undefined> {
    return this.accounts.callerState(accountId);
  }

  /** Inside a transaction a service opened (AdminService), the account commits with the rows that must exist with it. */
  async create(name: string, planName: string): Promise<Account> {
    await this.getPlan(planName);
    return this.accounts.create(name, planName);
  }

  async get(id: string): Promise<Account> {
    const account = await this.accounts.findById(id);
    if (!account) throw new AppError('NOT_FOUND', `No account ${id}.`);
    return account;
  }

  /** Newest first; `beforeSeq` from the previous page's last account (see keysetPage). */
  page(filter: AccountFilter, limit: number, beforeSeq: string | undefined): Promise<Array<Account & { seq: string }>> {
    return this.accounts.page(filter, limit, beforeSeq);
  }

  count(): Promise<number> {
    return this.accounts.count();
  }

  async setPlan(id: string, planName: string): Promise<Account> {
    await this.get(id);
    await this.getPlan(planName);
    await this.accounts.setPlan(id, planName);
    return this.get(id);
  }

  async setDisabled(id: string, disabled: boolean): Promise<Account> {
    await this.get(id);
    await this.accounts.setDisabled(id, disabled);
    return this.get(id);
  }

  async getPlan(name: string): Promise<Plan> {
    const plan = await this.accounts.findPlan(name);
    if (!plan) throw new AppError('NOT_FOUND', `No plan named "${name}".`);
    return plan;
  }

  /** How many numbers the account's plan lets it watch (watchlists). */
  async maxWatchedNumbers(accountId: string): Promise<number> {
    const account = await this.get(accountId);
    return (await this.getPlan(account.plan)).maxWatchedNumbers;
  }

  listPlans(): Promise<Plan[]> {
    return this.accounts.listPlans();
  }

  async updatePlan(name: string, limit: number, windowSeconds: number, maxWatchedNumbers?: number): Promise<Plan> {
    await this.getPlan(name);
    return (await this.accounts.updatePlan(name, limit, windowSeconds, maxWatchedNumbers))!;
  }
}
