import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { columnsFromChecks, EnabledChecks } from '../checks/checks';
import { AccountSettings } from './account-settings.entity';

@Injectable()
export class SettingsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The default settings of a new account (the columns' defaults) and its webhook secret, in the caller's transaction. */
  async createDefaults(transaction: EntityManager, accountId: string): Promise<void> {
    await transaction.query(`INSERT INTO account_settings (account_id, webhook_secret) VALUES ($1, $2)`, [
      accountId,
      `whsec_${randomBytes(24).toString('base64url')}`,
    ]);
  }

  findByAccount(accountId: string): Promise<AccountSettings | null> {
    return this.db.getRepository(AccountSettings).findOneBy({ accountId });
  }

  async updateChecks(accountId: string, checks: Partial<EnabledChecks>): Promise<void> {
    const changes = columnsFromChecks(checks);
    if (Object.keys(changes).length > 0) await this.db.getRepository(AccountSettings).update({ accountId }, changes);
  }
}
