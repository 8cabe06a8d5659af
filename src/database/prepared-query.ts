import type { DataSource } from 'typeorm';
import { DatabaseError, type Pool, type PoolClient, type QueryResultRow } from 'pg';

/**
 * A statement of the request path, run as a named prepared statement on the pool TypeORM opened:
 * PostgreSQL parses and plans its text once per connection instead of on every call (the charge
 * statement's plan cost more of the server's CPU than its rows did), and the call skips TypeORM's
 * query runner. Only for statements outside a transaction, with a fixed text (arrays, not a
 * varying number of placeholders). A failure goes to the data source's logger, as TypeORM's own
 * queries' do (the app's DatabaseLogger: never the parameters), and is rethrown as pg's own error,
 * which `hasSqlState` reads.
 *
 * The connection goes back to the pool after an error of the statement (a lock timeout, a unique
 * violation): only a failure of the connection itself closes it (pool.query would close it after
 * any error, and reconnecting and preparing again is what a struggling database can least afford).
 *
 * Behind a connection pooler in transaction mode, prepared statements need its support
 * (PgBouncer ≥ 1.21 with `max_prepared_statements`; docs/operations.md, "Scaling").
 */
export async function preparedQuery<Row extends QueryResultRow>(db: DataSource, name: string, text: string, values: unknown[]): Promise<Row[]> {
  const pool = (db.driver as unknown as { master?: Pool }).master;
  // The data source closed (a call still running at shutdown): the same error, and the same 503, as TypeORM's.
  if (!pool || pool.ending) throw new Error('Driver not Connected');
  let client: PoolClient | undefined;
  let failure: unknown;
  // The pool listens for a connection's errors only while it is idle: while the statement runs, a
  // socket reset or a server gone without a word must land here, not crash the process.
  const onConnectionError = (error: Error) => {
    failure ??= error;
  };
  try {
    client = await pool.connect();
    client.on('error', onConnectionError);
    return (await client.query<Row>({ name, text, values })).rows;
  } catch (error) {
    failure ??= error;
    db.logger.logQueryError(error as Error, `prepared statement ${name}`);
    throw error;
  } finally {
    client?.removeListener('error', onConnectionError);
    client?.release(failure !== undefined && brokeTheConnection(failure) ? (failure as Error) : undefined);
  }
}

/**
 * Whether an error leaves the connection unusable: anything but an error the server sent about the
 * statement (a socket error, a timeout of the client), connection exceptions (class 08), the server
 * shutting down or killing the session (57P0x), and the two errors after which pg would go on running
 * a prepared statement the server no longer runs as named: 26000 (it does not exist there: a pooler in
 * between, a DISCARD) and 0A000 raised by the plan cache ("cached plan must not change result type": a
 * migration changed a table under it). A new connection prepares the statement again.
 */
export function brokeTheConnection(error: unknown): boolean {
  if (!(error instanceof DatabaseError)) return true;
  const { code = '', routine } = error;
  return /^(08|57P0)/.test(code) || code === '26000' || (code === '0A000' && routine === 'RevalidateCachedQuery');
}
