import { randomUUID } from 'node:crypto';
import type { TestApp } from './test-app';

/**
 * A trigger of one test (dropped by the function returned): the database refuses the updates of
 * `table` that match `when`, like a database that went away between two statements.
 */
export async function refuseUpdates(t: Pick<TestApp, 'db'>, table: string, when: string): Promise<() => Promise<void>> {
  const name = `pf_test_refuse_${randomUUID().replace(/-/g, '')}`;
  await t.db.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'simulated outage'; END $$`);
  await t.db.query(`CREATE TRIGGER ${name} BEFORE UPDATE ON ${table} FOR EACH ROW WHEN (${when}) EXECUTE FUNCTION ${name}()`);
  return async () => {
    await t.db.query(`DROP TRIGGER ${name} ON ${table}`);
    await t.db.query(`DROP FUNCTION ${name}()`);
  };
}
