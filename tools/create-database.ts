/**
 * `npm run db:create`: creates the database named in DATABASE_URL on its server when it does not
 * exist yet (the service's migrations fill it at start-up). For running against your own PostgreSQL
 * without its client tools; a no-op when the database is there.
 */
import { Client } from 'pg';

async function main(): Promise<number> {
  const target = process.env.DATABASE_URL;
  if (!target) {
    process.stderr.write('DATABASE_URL is not set: it names the database to create, e.g. postgres://postgres@127.0.0.1:5432/phone_filter\n');
    return 2;
  }
  const url = new URL(target);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount) {
      process.stdout.write(`database "${name}" exists\n`);
    } else {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      process.stdout.write(`created database "${name}"\n`);
    }
    return 0;
  } finally {
    await client.end();
  }
}

main().then(
  (code) => process.exit(code),
  (error: Error) => {
    process.stderr.write(`could not create the database: ${error.message}\n`);
    process.exit(1);
  },
);
