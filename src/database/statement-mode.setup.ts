import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { chooseStatementMode } from './prepared-query';

/** DATABASE_PREPARED_STATEMENTS applied to the app's data source before it serves (see chooseStatementMode). */
@Injectable()
export class StatementModeSetup implements OnApplicationBootstrap {
  private readonly logger = new Logger('Database');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const setting = this.config.database.preparedStatements;
    const named = await chooseStatementMode(this.db, setting);
    if (setting === 'auto' && !named) {
      this.logger.warn('Named prepared statements do not survive between transactions (a pooler in transaction mode): the charge and settle statements run unnamed (DATABASE_PREPARED_STATEMENTS, docs/operations.md)');
    }
  }
}
