import { DataSource } from 'typeorm';
import type { Pool, PoolClient } from 'pg';
import { brokeTheConnection, preparedQuery } from '../src/database/prepared-query';

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
    const running = preparedQuery(db, 'test_sleep', 'SELECT pg_sleep($1::float8)', [2]);
    // The socket of the one connection, reset while the statement runs (no error message from the server first).
    await new Promise((resolve) => setTimeout(resolve, 200));
    const busy = (pool as unknown as { _clients: Array<{ connection: { stream: { destroy(error: Error): void } } }> })._clients[0];
    busy.connection.stream.destroy(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }));
    const failure = await running.catch((error: unknown) => error);
    expect(brokeTheConnection(failure)).toBe(true);
    const after = await backend();
    expect(after).not.toBe(before);
  });

  it('says "Driver not Connected" (answered 503) once the data source is closed', async () => {
    await db.destroy();
    await expect(backend()).rejects.toThrow('Driver not Connected');
  });

  it('tells statement errors from broken connections', () => {
    expect(brokeTheConnection({ code: '22012' })).toBe(false);
    expect(brokeTheConnection({ code: '23505' })).toBe(false);
    expect(brokeTheConnection({ code: '55P03' })).toBe(false);
    expect(brokeTheConnection({ code: '57014' })).toBe(false);
    expect(brokeTheConnection({ code: '57P01' })).toBe(true);
    expect(brokeTheConnection({ code: '08006' })).toBe(true);
    expect(brokeTheConnection({ code: '26000' })).toBe(true);
    expect(brokeTheConnection({ code: '0A000' })).toBe(true);
    expect(brokeTheConnection({ code: 'ECONNRESET' })).toBe(true);
    expect(brokeTheConnection(new Error('Connection terminated unexpectedly'))).toBe(true);
  });
});
