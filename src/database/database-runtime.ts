import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options';
import { startEmbeddedPostgres } from './embedded-postgres';
import { resolveEmbeddedDataDir } from './embedded-postgres-staging';

export interface DatabaseHandle {
  url: string;
  embedded: boolean;
  /** The embedded server's data folder. */
  dataDir?: string;
  /** What start-up should say about where the embedded server and its data are. */
  notes: string[];
  stop(): Promise<void>;
}

/**
 * DATABASE_URL when set; otherwise the embedded PostgreSQL with its data in EMBEDDED_PG_DIR (unset:
 * .data/pg in the checkout, or a folder the postgres system user can reach; embedded-postgres-staging.ts).
 */
export async function openDatabase(databaseUrl: string | undefined, embeddedDir: string | undefined): Promise<DatabaseHandle> {
  if (databaseUrl) return { url: databaseUrl, embedded: false, notes: [], stop: async () => undefined };
  const { dataDir, note } = resolveEmbeddedDataDir(embeddedDir);
  const embedded = await startEmbeddedPostgres({ dataDir, persistent: true });
  const notes = [
    ...(note ? [note] : []),
    ...(embedded.binariesStagedIn ? [`the system user postgres cannot reach the checkout, so its binaries run from ${embedded.binariesStagedIn}`] : []),
  ];
  return { url: embedded.url, embedded: true, dataDir, notes, stop: () => embedded.stop() };
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
