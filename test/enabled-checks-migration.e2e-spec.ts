import { randomUUID } from 'node:crypto';
import { DataSource, QueryRunner } from 'typeorm';
import { EnabledChecksAsData1764600000000 } from '../migrations/1764600000000-EnabledChecksAsData';
import { WatchedFieldsAsData1764600000001 } from '../migrations/1764600000001-WatchedFieldsAsData';
import { dataSourceOptions } from '../src/database/data-source-options';

/**
 * The migration that stores enabled checks as data keeps every existing account's settings exactly,
 * and its down gives the three columns back. Run inside one transaction that is rolled back (DDL is
 * transactional in PostgreSQL), so the e2e database is left as the other suites see it.
 */
describe('migration EnabledChecksAsData', () => {
  let db: DataSource;
  let q: QueryRunner;
  const combinations = [0, 1, 2, 3, 4, 5, 6, 7].map((mask) => ({ id: randomUUID(), network_status: (mask & 4) > 0, line_type: (mask & 1) > 0, portability: (mask & 2) > 0 }));

  beforeAll(async () => {
    db = await new DataSource({ ...dataSourceOptions(process.env.DATABASE_URL!, 2) }).initialize();
    q = db.createQueryRunner();
    await q.startTransaction();
    // Back to the schema before it: three boolean columns.
    await new WatchedFieldsAsData1764600000001().down(q);
    await new EnabledChecksAsData1764600000000().down(q);
    for (const account of combinations) {
      await q.query(`INSERT INTO accounts (id, name, plan) VALUES ($1, 'migration test', 'free')`, [account.id]);
      await q.query(`INSERT INTO account_settings (account_id, webhook_secret, network_status, line_type, portability) VALUES ($1, 'whsec_x', $2, $3, $4)`, [
        account.id,
        account.network_status,
        account.line_type,
        account.portability,
      ]);
    }
  });
  afterAll(async () => {
    await q?.rollbackTransaction();
    await q?.release();
    await db?.destroy();
  });

  const ids = () => combinations.map((account) => account.id);

  it('up: each account keeps exactly its checks, as the names of the enabled ones', async () => {
    await new EnabledChecksAsData1764600000000().up(q);
    const rows: Array<{ account_id: string; checks: string[] }> = await q.query(`SELECT account_id, checks FROM account_settings WHERE account_id = ANY ($1)`, [ids()]);
    const byId = new Map(rows.map((row) => [row.account_id, [...row.checks].sort()]));
    for (const account of combinations) {
      const expected = (['line_type', 'network_status', 'portability'] as const).filter((name) => account[name]);
      expect(byId.get(account.id)).toEqual(expected);
    }
    const columns: Array<{ column_name: string }> = await q.query(
      `SELECT column_name FROM information_schema.columns WHERE table_name = 'account_settings' AND column_name IN ('network_status', 'line_type', 'portability')`,
    );
    expect(columns).toEqual([]);
  });

  it('down: the three columns come back with the same values', async () => {
    await new EnabledChecksAsData1764600000000().down(q);
    const rows: Array<{ account_id: string; network_status: boolean; line_type: boolean; portability: boolean }> = await q.query(
      `SELECT account_id, network_status, line_type, portability FROM account_settings WHERE account_id = ANY ($1)`,
      [ids()],
    );
    expect(rows.sort((a, b) => a.account_id.localeCompare(b.account_id))).toEqual(
      combinations.map(({ id, ...checks }) => ({ account_id: id, ...checks })).sort((a, b) => a.account_id.localeCompare(b.account_id)),
    );
  });
});
