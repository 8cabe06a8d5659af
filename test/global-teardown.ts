import { withClient } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  // The redis-server the setup started, if it had to (test/helpers/redis.ts).
  if (globalThis.__testRedisPid) process.kill(globalThis.__testRedisPid, 'SIGTERM');
  const database = globalThis.__testDatabase;
  if (database?.kind === 'server') {
    await withClient(database.serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${database.name} WITH (FORCE)`));
  } else if (database?.kind === 'embedded') {
    await database.stop();
  }
}
