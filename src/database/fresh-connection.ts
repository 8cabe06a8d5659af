import type { DataSource } from 'typeorm';
import { Client, type QueryResultRow } from 'pg';
import { poolOf } from './pool';

export type FreshQuery = <Row extends QueryResultRow>(text: string, values: unknown[]) => Promise<Row[]>;

/**
 * `work` on a connection of its own, opened for it and closed after, with the pool's settings: for
 * the statements that decide a call whose outcome is unknown (its settle's reply was lost). The pool
 * may still hold connections that a reset broke without a word yet; a statement sent on one of them
 * fails again, and a fresh connection is the one way to ask the database rather than the debris.
 * `timeoutMs` bounds the connect and each statement.
 */
export async function onFreshConnection<T>(db: DataSource, timeoutMs: number, work: (query: FreshQuery) => Promise<T>): Promise<T> {
  const pool = poolOf(db);
  if (!pool || pool.ending) throw new Error('Driver not Connected');
  const client = new Client({ ...pool.options, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs, keepAlive: true });
  // A reset after the answer must not reach the process as an unhandled 'error' event.
  client.on('error', () => undefined);
  let connected = false;
  try {
    await client.connect();
    connected = true;
    return await work(async <Row extends QueryResultRow>(text: string, values: unknown[]) => (await client.query<Row>(text, values)).rows);
  } finally {
    if (connected) await client.end().catch(() => undefined);
  }
}
