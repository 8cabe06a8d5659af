import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { columnsFromChecks, EnabledChecks } from '../checks/checks';
import { AccountSettings } from './account-settings.entity';

export type AccountControls = Pick<AccountSettings, 'dailyCreditLimit' | 'lowBalanceThreshold' | 'webhookUrl'>;

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

  /** Checks and controls in one UPDATE; only what is given changes (null clears a control). */
  async update(accountId: string, checks: Partial<EnabledChecks>, controls: Partial<AccountControls>): Promise<void> {
    const changes: Partial<AccountSettings> = { ...columnsFromChecks(checks) };
    if (controls.dailyCreditLimit !== undefined) changes.dailyCreditLimit = controls.dailyCreditLimit;
    if (controls.lowBalanceThreshold !== undefined) {
      // A new threshold re-arms its alert.
      changes.lowBalanceThreshold = controls.lowBalanceThreshold;
      changes.lowBalanceAlerted = false;
    }
    if (controls.webhookUrl !== undefined) changes.webhookUrl = controls.webhookUrl;
    if (Object.keys(changes).length > 0) await this.db.getRepository(AccountSettings).update({ accountId }, changes);
  }
}
