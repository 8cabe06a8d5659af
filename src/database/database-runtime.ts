import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options';
import { startEmbeddedPostgres } from './embedded-postgres';

export interface DatabaseHandle {
  url: string;
  embedded: boolean;
  stop(): Promise<void>;
}

/** DATABASE_URL when set; otherwise the embedded PostgreSQL with its data in `embeddedDir`. */
export async function openDatabase(databaseUrl: string | undefined, embeddedDir: string): Promise<DatabaseHandle> {
  if (databaseUrl) return { url: databaseUrl, embedded: false, stop: async () => undefined };
  const embedded = await startEmbeddedPostgres({ dataDir: embeddedDir, persistent: true });
  return { url: embedded.url, embedded: true, stop: () => embedded.stop() };
}

const MIGRATION_LOCK_ID = 72_616_001;

/**
 * Applies pending migrations under a Postgres advisory lock, so several instances starting at once
 * migrate exactly once. Returns the names applied.
 */
export async function migrate(url: string): Promise<string[]> {
  const dataSource = new DataSource({ ...dataSourceOptions(url, 2), logging: ['error'] });
  await dataSource.initialize();
  const lock = dataSource.createQueryRunner();
  try {
    await lock.connect();
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]);
    return applied.map((migration) => migration.name);
  } finally {
    await lock.release();
    await dataSource.destroy();
  }
}
