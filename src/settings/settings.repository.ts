import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { EnabledChecks } from '../provider/lookup.types';
import { AccountSettings } from './account-settings.entity';

@Injectable()
export class SettingsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  findByAccount(accountId: string): Promise<AccountSettings | null> {
    return this.db.getRepository(AccountSettings).findOneBy({ accountId });
  }

  async updateChecks(accountId: string, checks: Partial<EnabledChecks>): Promise<void> {
    const changes: Partial<AccountSettings> = {};
    if (checks.network_status !== undefined) changes.networkStatus = checks.network_status;
    if (checks.line_type !== undefined) changes.lineType = checks.line_type;
    if (checks.portability !== undefined) changes.portability = checks.portability;
    if (Object.keys(changes).length > 0) await this.db.getRepository(AccountSettings).update({ accountId }, changes);
  }
}
