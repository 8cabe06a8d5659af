import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { Pool, QueryResultRow } from 'pg';

const logger = new Logger('Database');

/**
 * A statement of the request path, run as a named prepared statement on the pool TypeORM opened:
 * PostgreSQL parses and plans its text once per connection instead of on every call (the charge
 * statement's plan cost more of the server's CPU than its rows did), and the call skips TypeORM's
 * query runner. Only for statements outside a transaction, with a fixed text (arrays, not a
 * varying number of placeholders). A failure is logged as TypeORM's are (no parameters: they can
 * hold phone numbers) and rethrown as pg's own error, which `hasSqlState` reads.
 *
 * Behind a connection pooler in transaction mode, prepared statements need its support
 * (PgBouncer ≥ 1.21 with `max_prepared_statements`; docs/operations.md).
 */
export async function preparedQuery<Row extends QueryResultRow>(db: DataSource, name: string, text: string, values: unknown[]): Promise<Row[]> {
  const pool = (db.driver as unknown as { master: Pool }).master;
  try {
    return (await pool.query<Row>({ name, text, values })).rows;
  } catch (error) {
    const code = (error as { code?: string }).code;
    logger.warn(`query failed${code ? ` (${code})` : ''}: ${(error as Error).message}; statement: ${name}`);
    throw error;
  }
}
