import { DataSource } from 'typeorm';
import { DatabaseError, type Pool, type PoolClient } from 'pg';
import { brokeTheConnection, preparedQuery } from '../src/database/prepared-query';
import { eventually } from './helpers/eventually';

/**
 * The request path's statements (the charge, the settle) run as named prepared statements on the
 * pool TypeORM opened (src/database/prepared-query.ts). Against the suite's PostgreSQL, with a pool of
 * one connection so that "the same connection" can be seen (its server process id).
 */
describe('preparedQuery: named statements on the pool, connections kept after a statement error', () => {
  let db: DataSource;

  beforeEach(async () => {
    db = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 1 } });
    await db.initialize();
  });
  afterEach(async () => {
    if (db.isInitialized) await db.destroy();
  });

  const backend = async () => (await preparedQuery<{ pid: number }>(db, 'test_backend_pid', 'SELECT pg_backend_pid() AS pid', []))[0].pid;

  /** The statements pg has prepared on the pool's one connection. */
  async function preparedOnConnection(): Promise<string[]> {
    const pool = (db.driver as unknown as { master: Pool }).master;
    const client = (await pool.connect()) as PoolClient & { connection: { parsedStatements: Record<string, string> } };
    try {
      return Object.keys(client.connection.parsedStatements);
    } finally {
      client.release();
    }
  }

  it('prepares a statement once per connection and runs it by name afterwards', async () => {
    const rows = await preparedQuery<{ n: number }>(db, 'test_add', 'SELECT $1::int + $2::int AS n', [2, 3]);
    expect(rows).toEqual([{ n: 5 }]);
    expect(await preparedOnConnection()).toContain('test_add');
    expect(await preparedQuery(db, 'test_add', 'SELECT $1::int + $2::int AS n', [40, 2])).toEqual([{ n: 42 }]);
    // PostgreSQL's own view of the session: the statement is there, by its name.
    expect(await preparedQuery(db, 'test_prepared', 'SELECT name FROM pg_prepared_statements ORDER BY name', [])).toEqual(
      expect.arrayContaining([{ name: 'test_add' }]),
    );
  });

  it('keeps the connection (and what it prepared) after an error of the statement itself', async () => {
    const before = await backend();
    await expect(preparedQuery(db, 'test_divide', 'SELECT 1 / $1::int AS n', [0])).rejects.toMatchObject({ code: '22012' });
    expect(await backend()).toBe(before);
    expect(await preparedOnConnection()).toEqual(expect.arrayContaining(['test_backend_pid', 'test_divide']));
    // Run by its name again on the same connection: the server still has it.
    expect(await preparedQuery(db, 'test_divide', 'SELECT 1 / $1::int AS n', [1])).toEqual([{ n: 1 }]);
    expect(await backend()).toBe(before);
  });

  it('drops a connection that broke, and prepares again on the next one', async () => {
    const before = await backend();
    const admin = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL });
    await admin.initialize();
    try {
      await admin.query('SELECT pg_terminate_backend($1)', [before]);
    } finally {
      await admin.destroy();
    }
    // The pool drops the connection (as it errors while idle, or as the next statement fails on it:
    // brokeTheConnection then hands the error back to the pool); a later call runs on a new one.
    let after: number | undefined;
    for (let attempt = 0; attempt < 20 && after === undefined; attempt++) {
      after = await backend().catch((error: unknown) => {
        expect(brokeTheConnection(error)).toBe(true);
        return undefined;
      });
    }
    expect(after).toEqual(expect.any(Number));
    expect(after).not.toBe(before);
  });

  it('fails the statement, not the process, when the connection breaks while it runs', async () => {
    const before = await backend();
    const pool = (db.driver as unknown as { master: Pool }).master;
    let busy: PoolClient | undefined;
    pool.once('acquire', (client: PoolClient) => (busy = client));
    const running = preparedQuery(db, 'test_sleep', 'SELECT pg_sleep($1::float8)', [30]);
    // Once the server runs it (seen from another connection), the socket is reset under it, without a
    // word from the server first.
    const observer = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL });
    await observer.initialize();
    try {
      await eventually(
        (): Promise<unknown[]> => observer.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE 'SELECT pg_sleep%' AND state = 'active'`, [before]),
        (rows) => rows.length > 0,
        30_000,
        25,
      );
      (busy as unknown as { connection: { stream: { destroy(error: Error): void } } }).connection.stream.destroy(
        Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      );
      await expect(running).rejects.toMatchObject({ code: 'ECONNRESET' });
      const after = await backend();
      expect(after).not.toBe(before);
      await observer.query('SELECT pg_terminate_backend($1)', [before]);
    } finally {
      await observer.destroy();
    }
  });

  it('says "Driver not Connected" (answered 503) once the data source is closed', async () => {
    await db.destroy();
    await expect(backend()).rejects.toThrow('Driver not Connected');
  });

  it('tells statement errors from broken connections', () => {
    const fromServer = (code: string, routine?: string) => Object.assign(new DatabaseError('error', 0, 'error'), { code, routine });
    expect(brokeTheConnection(fromServer('22012'))).toBe(false);
    expect(brokeTheConnection(fromServer('23505'))).toBe(false);
    expect(brokeTheConnection(fromServer('55P03'))).toBe(false);
    expect(brokeTheConnection(fromServer('57014'))).toBe(false);
    expect(brokeTheConnection(fromServer('0A000', 'transformExprRecurse'))).toBe(false);
    expect(brokeTheConnection(fromServer('57P01'))).toBe(true);
    expect(brokeTheConnection(fromServer('08006'))).toBe(true);
    expect(brokeTheConnection(fromServer('26000'))).toBe(true);
    expect(brokeTheConnection(fromServer('0A000', 'RevalidateCachedQuery'))).toBe(true);
    expect(brokeTheConnection(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))).toBe(true);
    expect(brokeTheConnection(new Error('Connection terminated unexpectedly'))).toBe(true);
  });

  it('prepares a statement again on a new connection once the server lost it (26000)', async () => {
    const before = await backend();
    // The server forgets the connection's prepared statements (as behind a pooler that changed sessions).
    await preparedQuery(db, 'test_forget', 'DEALLOCATE ALL', []);
    const failure = await preparedQuery(db, 'test_backend_pid', 'SELECT pg_backend_pid() AS pid', []).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: '26000' });
    const after = await backend();
    expect(after).not.toBe(before);
  });
});
