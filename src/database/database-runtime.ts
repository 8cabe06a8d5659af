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
  /** Stops the embedded server (killed after `timeoutMs`); nothing with DATABASE_URL. */
  stop(timeoutMs?: number): Promise<void>;
  /** Synchronous last resort for process 'exit': signals the embedded server to stop, without waiting. */
  stopWithoutWaiting(): void;
}

/**
 * DATABASE_URL when set; otherwise the embedded PostgreSQL with its data in EMBEDDED_PG_DIR (unset:
 * .data/pg in the checkout, or a folder the postgres system user can reach; embedded-postgres-staging.ts),
 * restarted should it die, `onLost` called when it cannot be.
 */
export async function openDatabase(databaseUrl: string | undefined, embeddedDir: string | undefined, onLost?: (error: Error) => void): Promise<DatabaseHandle> {
  if (databaseUrl) return { url: databaseUrl, embedded: false, notes: [], stop: async () => undefined, stopWithoutWaiting: () => undefined };
  const { dataDir, note } = resolveEmbeddedDataDir(embeddedDir);
  const embedded = await startEmbeddedPostgres({ dataDir, persistent: true, onLost });
  const notes = [
    ...(note ? [note] : []),
    ...(embedded.binariesStagedIn ? [`the system user postgres cannot reach the checkout, so its binaries run from ${embedded.binariesStagedIn}`] : []),
  ];
  return { url: embedded.url, embedded: true, dataDir, notes, stop: (timeoutMs) => embedded.stop(timeoutMs), stopWithoutWaiting: () => embedded.stopWithoutWaiting() };
}

const SCHEMA_LOCK_ID = 72_616_001;

/**
 * Applies pending migrations under a Postgres advisory lock, so several instances starting at once
 * migrate exactly once. Returns the names applied.
 */
export async function migrate(url: string): Promise<string[]> {
  const dataSource = new DataSource({ ...dataSourceOptions(url, 2), logging: ['error'] });
  await dataSource.initialize();
  try {
    const applied = await underSchemaLock(dataSource, () => dataSource.runMigrations({ transaction: 'each' }));
    return applied.map((migration) => migration.name);
  } finally {
    await dataSource.destroy();
  }
}

/**
 * `work` while holding the advisory lock of schema changes: the migrations, and the bulk queue's
 * set-up (pg-boss creates its tables and queues with DDL that deadlocks when instances start together).
 */
export async function underSchemaLock<T>(dataSource: DataSource, work: () => Promise<T>): Promise<T> {
  const lock = dataSource.createQueryRunner();
  try {
    await lock.connect();
    await lock.query('SELECT pg_advisory_lock($1)', [SCHEMA_LOCK_ID]);
    try {
      return await work();
    } finally {
      await lock.query('SELECT pg_advisory_unlock($1)', [SCHEMA_LOCK_ID]);
    }
  } finally {
    await lock.release();
  }
}
