/* global process, console */
// `npm start`, step 1: compile only what changed since the last build, and only when something did.
// A start with nothing changed costs a walk over the sources' timestamps (a few milliseconds) instead of a
// TypeScript run; a start after an edit runs tsc incrementally (tsconfig.build.json keeps its
// .tsbuildinfo in dist/), saying so in one line. Step 2 (package.json) execs the built service, so the
// signals npm forwards (and a terminal's SIGHUP) reach the service itself.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
const stamp = join(root, 'dist', '.built-at');
const entry = join(root, 'dist', 'src', 'main.js');
/** What tsconfig.build.json compiles, and what changes its output. */
const inputs = ['src', 'migrations', 'tools', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

/** The newest modification time under a path; folders count too, so a deleted or renamed file shows. */
function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return path.endsWith('.spec.ts') ? 0 : stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const name of readdirSync(path)) latest = Math.max(latest, newest(join(path, name)));
  return latest;
}

const builtAt = existsSync(entry) ? (statSync(stamp, { throwIfNoEntry: false })?.mtimeMs ?? 0) : 0;
const changedAt = Math.max(...inputs.map((input) => newest(join(root, input))));
if (changedAt > builtAt) {
  const startedAt = Date.now();
  process.stdout.write(builtAt === 0 ? 'Building the service (first start; later starts build only what changed)…\n' : 'Building what changed since the last start…\n');
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) {
    console.error('The build failed (above): nothing was started.');
    process.exit(result.status ?? 1);
  }
  writeFileSync(stamp, `built in ${Date.now() - startedAt} ms\n`);
  // Dated from the build's start: a file saved while tsc ran is built by the next start.
  utimesSync(stamp, new Date(startedAt), new Date(startedAt));
}
