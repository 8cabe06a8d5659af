import { Logger } from '@nestjs/common';
import type { Logger as TypeOrmLogger } from 'typeorm';

const QUERY_EXCERPT = 160;

/**
 * TypeORM's messages through the app's logger, WITHOUT query parameters: they can hold phone numbers
 * and request bodies (idempotency records). A failed query is a warning: the error that matters
 * reaches the exception filter, which logs it with the request id.
 */
export class DatabaseLogger implements TypeOrmLogger {
  private readonly logger = new Logger('Database');

  logQuery(): void {}

  logQueryError(error: string | Error, query: string): void {
    const code = typeof error === 'object' ? (error as { code?: string }).code : undefined;
    const message = typeof error === 'string' ? error : error.message;
    this.logger.warn(`query failed${code ? ` (${code})` : ''}: ${message}; query: ${excerpt(query)}`);
  }

  logQuerySlow(time: number, query: string): void {
    this.logger.warn(`slow query (${time} ms): ${excerpt(query)}`);
  }

  logSchemaBuild(message: string): void {
    this.logger.debug(message);
  }

  logMigration(message: string): void {
    this.logger.log(message);
  }

  log(level: 'log' | 'info' | 'warn', message: unknown): void {
    if (level === 'warn') this.logger.warn(String(message));
    else this.logger.debug(String(message));
  }
}

function excerpt(query: string): string {
  const flat = query.replace(/\s+/g, ' ').trim();
  return flat.length > QUERY_EXCERPT ? `${flat.slice(0, QUERY_EXCERPT)}…` : flat;
}
