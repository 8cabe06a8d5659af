import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { migrate } from '../src/database/database-runtime';
import { startEmbeddedPostgres, temporaryDataDir } from '../src/database/embedded-postgres';
import { ensureTestRedis } from './helpers/redis';

/**
 * One real PostgreSQL for the e2e run: a fresh database on DATABASE_URL's server when it is set
 * (so parallel runs never share data), otherwise an embedded server in a temporary folder.
 * Migrations are applied once here; the tests see the result through DATABASE_URL.
 */
export default async function globalSetup(): Promise<void> {
  if (globalThis.__testDatabase) return; // set up already, for another project of this run (e2e and medium share it)
  const serverUrl = process.env.DATABASE_URL;
  if (serverUrl) {
    const name = `phone_filter_test_${randomBytes(5).toString('hex')}`;
    await withClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`)).catch((error: Error) => {
      throw oneLine(
        `PostgreSQL at DATABASE_URL (${redactPassword(serverUrl)}) does not answer: ${error.message}. ` +
          'Start it, or unset DATABASE_URL to let the tests run an embedded PostgreSQL.',
      );
    });
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
  await createTemplate(process.env.DATABASE_URL!);
  await setUpRedis(); // last: a redis-server started here is stopped by the teardown, which a failed setup never reaches
}

/**
 * A copy of the migrated database that nobody connects to, for the medium tier: each medium file
 * creates its own database from it (test/medium/medium.ts), in a fraction of a second, so that a file
 * may move its clock and sweep the whole database without touching another file's rows.
 */
async function createTemplate(url: string): Promise<void> {
  const database = new URL(url).pathname.slice(1);
  const template = `${database}_template`;
  await withClient(url, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${template}`);
    await client.query(`CREATE DATABASE ${template} TEMPLATE ${database}`);
  });
  process.env.TEST_TEMPLATE_DATABASE = template;
}

/** Redis for the suites that need one (test/helpers/redis.ts); a missing one fails only those suites. */
async function setUpRedis(): Promise<void> {
  const redis = await ensureTestRedis();
  if (redis.url) process.env.TEST_REDIS_URL = redis.url;
  else process.env.TEST_REDIS_MISSING = redis.message;
  globalThis.__testRedisPid = redis.pid;
  console.log(`\n[e2e] ${redis.message}`);
}

/** An error jest prints as one line, without a stack trace into the setup's internals. */
function oneLine(message: string): Error {
  const error = new Error(message);
  error.stack = message;
  return error;
}

function redactPassword(url: string): string {
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

export async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

declare global {
  var __testRedisPid: number | undefined;
  var __testDatabase: { kind: 'server'; serverUrl: string; name: string } | { kind: 'embedded'; stop: () => Promise<void> } | undefined;
}
