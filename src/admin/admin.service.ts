import { Injectable } from '@nestjs/common';
import { AccountsService } from '../accounts/accounts.service';
import { ApiKeysService, IssuedKey } from '../auth/api-keys.service';
import { AppError } from '../common/errors';
import { CreditsService } from '../credits/credits.service';

export interface CreatedAccount {
  id: string;
  name: string;
  plan: string;
  balance: number;
  api_key: string;
}

/** Account, key and credit operations for the admin API and the admin CLI (one code path for both). */
@Injectable()
export class AdminService {
  constructor(
    private readonly accounts: AccountsService,
    private readonly keys: ApiKeysService,
    private readonly credits: CreditsService,
  ) {}

  async createAccount(input: { name: string; plan?: string; credits?: number }, actor: string): Promise<CreatedAccount> {
    const account = await this.accounts.create(input.name, input.plan ?? 'free');
    const balance = input.credits ? await this.credits.adjust(account.id, input.credits, 'initial credits', actor) : 0;
    const key = await this.keys.issue(account.id);
    return { id: account.id, name: account.name, plan: account.plan, balance, api_key: key.apiKey };
  }

  async issueKey(accountId: string): Promise<IssuedKey> {
    await this.accounts.get(accountId);
    return this.keys.issue(accountId);
  }

  async revokeKey(keyId: string): Promise<{ id: string; status: 'revoked' }> {
    const key = await this.keys.revoke(keyId);
    if (!key) throw new AppError('NOT_FOUND', `No API key ${keyId}.`);
    return { id: key.id, status: 'revoked' };
  }

  async changeCredits(accountId: string, amount: number, reason: string, actor: string): Promise<{ balance: number }> {
    await this.accounts.get(accountId);
    return { balance: await this.credits.adjust(accountId, amount, reason, actor) };
  }

  async setPlan(accountId: string, plan: string): Promise<{ id: string; plan: string }> {
    const account = await this.accounts.setPlan(accountId, plan);
    this.keys.forgetAccount(accountId);
    return { id: account.id, plan: account.plan };
  }

  countAccounts(): Promise<number> {
    return this.accounts.count();
  }
}
