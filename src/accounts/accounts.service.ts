import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AppError } from '../common/errors';
import { Account } from './account.entity';
import { AccountsRepository } from './accounts.repository';
import { Plan } from './plan.entity';

@Injectable()
export class AccountsService {
  constructor(private readonly accounts: AccountsRepository) {}

  /** `within` runs in the account's transaction (the caller's rows that must exist with it, or not at all). */
  async create(name: string, planName: string, within: (transaction: EntityManager, accountId: string) => Promise<void>): Promise<Account> {
    await this.getPlan(planName);
    return this.accounts.create(name, planName, within);
  }

  async get(id: string): Promise<Account> {
    const account = await this.accounts.findById(id);
    if (!account) throw new AppError('NOT_FOUND', `No account ${id}.`);
    return account;
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
