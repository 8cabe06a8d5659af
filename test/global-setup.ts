import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrate } from '../src/database/database-runtime';
import { startEmbeddedPostgres, temporaryDataDir } from '../src/database/embedded-postgres';

/**
 * One real PostgreSQL for the e2e run: a fresh database on DATABASE_URL's server when it is set
 * (so parallel runs never share data), otherwise an embedded server in a temporary folder.
 * Migrations are applied once here; the tests see the result through DATABASE_URL.
 */
export default async function globalSetup(): Promise<void> {
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const name = `phone_filter_test_${randomBytes(5).toString('hex')}`;
    await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    process.env.DATABASE_URL = url.toString();
    globalThis.__testDatabase = { kind: 'server', serverUrl, name };
    console.log(`\n[e2e] PostgreSQL from DATABASE_URL, fresh database ${name}`);
  } else {
    const embedded = await startEmbeddedPostgres({ dataDir: temporaryDataDir('test'), persistent: false, fast: true });
    process.env.DATABASE_URL = embedded.url;
    process.env.PHONE_FILTER_TEST_EMBEDDED = '1';
    globalThis.__testDatabase = { kind: 'embedded', stop: embedded.stop };
    console.log(`\n[e2e] no DATABASE_URL: embedded PostgreSQL in ${embedded.dataDir}`);
  }
  await migrate(process.env.DATABASE_URL!);
}

export async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

declare global {
  var __testDatabase: { kind: 'server'; serverUrl: string; name: string } | { kind: 'embedded'; stop: () => Promise<void> } | undefined;
}
