import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { columnsFromChecks, EnabledChecks } from '../checks/checks';
import { AccountSettings } from './account-settings.entity';

@Injectable()
export class SettingsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  findByAccount(accountId: string): Promise<AccountSettings | null> {
    return this.db.getRepository(AccountSettings).findOneBy({ accountId });
  }

  async updateChecks(accountId: string, checks: Partial<EnabledChecks>): Promise<void> {
    const changes = columnsFromChecks(checks);
    if (Object.keys(changes).length > 0) await this.db.getRepository(AccountSettings).update({ accountId }, changes);
  }
}
