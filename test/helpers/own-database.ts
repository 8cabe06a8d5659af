import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

export interface OwnDatabase {
  url: string;
  drop(): Promise<void>;
}

/**
 * A database of the caller's own on the run's server, copied from the run's migrated template
 * (test/global-setup.ts makes it) in a fraction of a second, so that test files can run side by side
 * and each may sweep the whole database without touching another's rows. Its name starts with the
 * run's database name, so the global teardown drops whatever a failed file left behind.
 */
export async function createOwnDatabase(runUrl: string, template: string | undefined, tag: string): Promise<OwnDatabase> {
  if (!template) throw new Error('No template database: run the tests through jest (test/global-setup.ts makes it)');
  const server = new URL(runUrl);
  const name = `${server.pathname.slice(1)}_${tag}${randomBytes(5).toString('hex')}`;
  await onServer(server, `CREATE DATABASE ${name} TEMPLATE ${template}`);
  const own = new URL(server);
  own.pathname = `/${name}`;
  return { url: own.toString(), drop: () => onServer(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) };
}

async function onServer(server: URL, statement: string): Promise<void> {
  const client = new Client({ connectionString: server.toString(), connectionTimeoutMillis: 30_000 });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
