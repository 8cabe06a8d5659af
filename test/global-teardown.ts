import { withClient } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  const database = globalThis.__testDatabase;
  if (database?.kind === 'server') {
    await withClient(database.serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${database.name} WITH (FORCE)`));
  } else if (database?.kind === 'embedded') {
    await database.stop();
  }
}
