import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { isDatabaseUnavailable } from '../../../src/common/all-exceptions.filter';
import { dataSourceOptions } from '../../../src/database/data-source-options';
import { poolOf } from '../../../src/database/pool';
import { eventually } from '../../helpers/eventually';

/**
 * PostgreSQL dying under a client checked out of the pool between two statements: the server's FATAL
 * reaches a client where pg-pool does not listen. The charge and settle statements (prepared-query.ts)
 * hold such clients; before guarded-client.ts the `error` event had no listener and ended the process
 * (the fault suite's kill -9 of PostgreSQL took an instance down: "Unhandled 'error' event", clean-clone
 * CI). Here the backend is terminated (the FATAL 57P01 a killed server sends): the process lives on,
 * and the next statement fails as "database unavailable" (503). TypeORM's query runners listen themselves.
 */
describe('a connection in a transaction that loses PostgreSQL', () => {
  let db: DataSource;
  let admin: Client;
  beforeAll(async () => {
    db = await new DataSource({ ...dataSourceOptions(process.env.DATABASE_URL!, 2), logging: false }).initialize();
    admin = new Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
    await db?.destroy();
  });

  const terminate = async (client: Client & { _queryable: boolean; processID: number }) => {
    await admin.query('SELECT pg_terminate_backend($1)', [client.processID]);
    // The FATAL has reached the client (pg marks it not queryable as it emits the error).
    await eventually(() => client._queryable, (queryable) => queryable === false, 30_000, 20);
  };

  it('a client checked out of the pool (as the charge statements hold one): the process lives on, the next statement fails as unavailable', async () => {
    const client = (await poolOf(db)!.connect()) as unknown as Client & { _queryable: boolean; processID: number; release(error?: Error): void };
    await client.query('SELECT 1');
    await terminate(client);
    const next = await client.query('SELECT 1').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isDatabaseUnavailable(next)).toBe(true);
    client.release(next as Error);
    expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });

  it('a TypeORM transaction between two statements: the same', async () => {
    const runner = db.createQueryRunner();
    const client = (await runner.connect()) as Client & { _queryable: boolean; processID: number };
    await runner.startTransaction();
    await runner.query('SELECT 1');
    await terminate(client);
    const next = await runner.query('SELECT 1').then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(next).toBeDefined();
    expect(isDatabaseUnavailable(next)).toBe(true);
    await runner.rollbackTransaction().catch(() => undefined);
    await runner.release().catch(() => undefined);
    // The pool serves again on a new connection.
    expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });
});
