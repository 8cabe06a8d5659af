import { loadavg } from 'node:os';
import { startEmbeddedPostgres, temporaryDataDir } from '../../src/database/embedded-postgres';

/** DATABASE_URL when set, else a throwaway embedded PostgreSQL: its URL and how to stop it. */
export async function benchDatabase(): Promise<{ url: string; stop: () => Promise<void> }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, stop: async () => undefined };
  const embedded = await startEmbeddedPostgres({ dataDir: temporaryDataDir('bench'), persistent: false });
  return { url: embedded.url, stop: () => embedded.stop() };
}

/** The machine's load average (1, 5, 15 min), which every figure of a shared machine is labelled with. */
export function loadAverage(): string {
  return loadavg().map((value) => value.toFixed(2)).join(' ');
}

/** Runs a bench script's main: exit 0 when it resolves, 1 with the error printed when it rejects. */
export function runMain(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
