import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The browser for the Swagger UI test, found in this order:
 *   1. CHROMIUM_PATH;
 *   2. a system Chromium (Debian's /usr/bin/chromium and its usual siblings);
 *   3. the Chromium shipped inside the `@sparticuz/chromium` dev dependency (brotli-packed in
 *      node_modules, unpacked once into a cache folder keyed by its version), so a machine with
 *      nothing but Node runs the test in full.
 * CHROMIUM_SOURCE=npm skips 1 and 2, so the npm browser can be exercised where a system one exists.
 */
export interface ChromiumChoice {
  executablePath: string;
  source: 'CHROMIUM_PATH' | 'system' | 'npm';
  args: string[];
}

export const SYSTEM_CHROMIUM_PATHS = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];

// Without the background-networking flags Chromium's own connections are refused on a closed network.
const COMMON_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export type LocalChoice = Omit<ChromiumChoice, 'args'> | { source: 'npm' };

/** Steps 1 and 2 of the order, as a pure function of the environment and the file system. */
export function pickLocalChromium(env: NodeJS.ProcessEnv, exists: (path: string) => boolean): LocalChoice {
  if (env.CHROMIUM_SOURCE === 'npm') return { source: 'npm' };
  if (env.CHROMIUM_PATH) {
    if (!exists(env.CHROMIUM_PATH)) throw new Error(`CHROMIUM_PATH=${env.CHROMIUM_PATH}: no such file`);
    return { executablePath: env.CHROMIUM_PATH, source: 'CHROMIUM_PATH' };
  }
  const system = SYSTEM_CHROMIUM_PATHS.find(exists);
  return system ? { executablePath: system, source: 'system' } : { source: 'npm' };
}

export async function findChromium(env: NodeJS.ProcessEnv = process.env): Promise<ChromiumChoice> {
  const local = pickLocalChromium(env, existsSync);
  if ('executablePath' in local) return { ...local, args: COMMON_ARGS };
  return { executablePath: await unpackNpmChromium(), source: 'npm', args: [...COMMON_ARGS, '--no-zygote', '--single-process'] };
}

/**
 * Unpacks @sparticuz/chromium's browser into <cache>/chromium-<version>/. The package unpacks into
 * os.tmpdir() (it was made for AWS Lambda), so it runs with TMPDIR at a private staging folder,
 * renamed into place when complete: parallel test runs never see a half-written binary.
 */
async function unpackNpmChromium(): Promise<string> {
  // The package's `exports` hide package.json; it sits two folders above the entry point.
  const manifest = join(dirname(require.resolve('@sparticuz/chromium')), '..', '..', 'package.json');
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version: string };
  const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'phone-filter');
  const target = join(cache, `chromium-${version}`);
  if (existsSync(join(target, 'chromium'))) return join(target, 'chromium');

  mkdirSync(cache, { recursive: true });
  const staging = mkdtempSync(join(cache, `chromium-${version}.partial-`));
  try {
    // A child process: jest hands a test its own copy of process.env, which os.tmpdir() never reads.
    const unpack = "require('@sparticuz/chromium').executablePath().then((path) => process.stdout.write(path))";
    execFileSync(process.execPath, ['-e', unpack], { env: { ...process.env, TMPDIR: staging }, stdio: ['ignore', 'pipe', 'inherit'] });
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
  try {
    renameSync(staging, target);
  } catch (error) {
    // Another run got there first: keep its copy.
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(join(target, 'chromium'))) throw error;
  }
  return join(target, 'chromium');
}
