import { withClient } from './global-setup';

declare global {
  var __testTornDown: boolean | undefined;
}

export default async function globalTeardown(): Promise<void> {
  if (globalThis.__testTornDown) return; // torn down already, for another project of this run
  globalThis.__testTornDown = true;
  // The redis-server the setup started, if it had to (test/helpers/redis.ts).
  if (globalThis.__testRedisPid) process.kill(globalThis.__testRedisPid, 'SIGTERM');
  const database = globalThis.__testDatabase;
  if (database?.kind === 'server') {
    await withClient(database.serverUrl, async (client) => {
      // The run's database, its template and the medium tier's copies (test/medium/medium.ts) left by a failed file.
      const rows: Array<{ datname: string }> = await client.query(`SELECT datname FROM pg_database WHERE datname LIKE $1 || '%'`, [database.name]).then((r) => r.rows);
      for (const { datname } of rows) await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    });
  } else if (database?.kind === 'embedded') {
    await database.stop();
  }
}
