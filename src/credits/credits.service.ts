import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppError } from '../common/errors';
import { CreditsRepository } from './credits.repository';

@Injectable()
export class CreditsService {
  constructor(private readonly credits: CreditsRepository) {}

  async balance(accountId: string): Promise<number> {
    const balance = await this.credits.balance(accountId);
    if (balance === undefined) throw new AppError('NOT_FOUND', `No account ${accountId}.`);
    return balance;
  }

  /** Adds credits (amount > 0, TOPUP) or corrects them (amount < 0, ADJUSTMENT, never below zero). */
  async adjust(accountId: string, amount: number, reason: string, actor: string, reference = `admin:${randomUUID()}`): Promise<number> {
    if (!Number.isSafeInteger(amount) || amount === 0) {
      throw new AppError('INVALID_REQUEST', 'amount must be a non-zero integer.');
    }
    const type = amount > 0 ? 'TOPUP' : 'ADJUSTMENT';
    const written = await this.credits.credit(accountId, type, amount, { reference, reason, actor });
    if (written) return written.balanceAfter;
    const balance = await this.balance(accountId);
    throw new AppError('INVALID_REQUEST', `amount ${amount} would take the balance (${balance}) below zero.`);
  }

  ledgerSum(accountId: string): Promise<number> {
    return this.credits.ledgerSum(accountId);
  }
}
