/* global process */
// Compiles the service (src/, migrations/, tools/ into dist/) with swc, and only what changed since the
// last build. `npm start` and `npm run admin` call it first, `npm run build` (containers) alone; --clean
// compiles everything from an empty dist/ (never while something runs from it).
//
// Why swc and not tsc: tsc type-checks the whole program before it writes a file (13 s on a quiet
// machine, 50 s on a busy one, the first `npm start`'s silence); swc transpiles file by file (about 1 s
// for all of them). Types are still checked, where a mistake is caught before it lands: `npm run lint`
// and `npm run typecheck` run tsc --noEmit, and CI runs lint. The options below are tsconfig.json's
// (target ES2023, so class fields with define semantics; legacy decorators with their design-type metadata,
// which Nest's injection reads).
//
// A start with nothing changed costs a walk over the sources' timestamps (a few milliseconds). Several
// processes starting at once (two terminals, a test run) build one at a time: the others wait for the
// lock, then find nothing left to build.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

const root = join(import.meta.dirname, '..', '..');
const dist = join(root, 'dist');
const stamp = join(dist, '.built-at');
const lock = join(dist, '.building');
/** What is compiled (tsconfig.build.json's include). */
const SOURCE_ROOTS = ['src', 'migrations', 'tools'];
/** What changes every output: any of them newer than the last build compiles everything again. */
const SETTINGS = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json', 'tools/start/build-if-changed.mjs'];

const SWC_OPTIONS = {
  sourceMaps: true,
  module: { type: 'commonjs', strictMode: true },
  jsc: {
    target: 'es2023',
    parser: { syntax: 'typescript', decorators: true, dynamicImport: true },
    transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: true },
    keepClassNames: true,
  },
};

/** A compiled file: TypeScript, not a test nor a script run by the tests only (tsconfig.build.json's exclude). */
function isCompiled(name) {
  return name.endsWith('.ts') && !name.endsWith('.d.ts') && !name.endsWith('.spec.ts') && !name.endsWith('.retention.ts');
}

/** Every file under a folder, with its modification time. */
function walk(folder, files = []) {
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) walk(path, files);
    else files.push(path);
  }
  return files;
}

/** The newest modification time under a path; folders count too, so a deleted or renamed file shows. */
function newest(path) {
  const stat = statSync(path, { throwIfNoEntry: false });
  if (!stat) return 0;
  if (!stat.isDirectory()) return path.endsWith('.spec.ts') ? 0 : stat.mtimeMs;
  let latest = stat.mtimeMs;
  for (const name of readdirSync(path)) latest = Math.max(latest, newest(join(path, name)));
  return latest;
}

const outputOf = (source) => join(dist, relative(root, source)).replace(/\.ts$/, '.js');

function builtAt() {
  if (!existsSync(join(dist, 'src', 'main.js'))) return 0;
  return statSync(stamp, { throwIfNoEntry: false })?.mtimeMs ?? 0;
}

function changedSince(time) {
  return Math.max(...[...SOURCE_ROOTS, ...SETTINGS].map((input) => newest(join(root, input)))) > time;
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** The pid holding the lock; 'gone' when it died (or never wrote its pid, 10 s after taking the lock). */
function lockHolder() {
  try {
    const pid = Number(readFileSync(join(lock, 'pid'), 'utf8'));
    return isAlive(pid) ? pid : 'gone';
  } catch {
    const since = statSync(lock, { throwIfNoEntry: false })?.mtimeMs;
    return since !== undefined && Date.now() - since > 10_000 ? 'gone' : 0;
  }
}

/** One build at a time in a checkout; a lock left by a process that died is taken over. */
function takeLock() {
  mkdirSync(dist, { recursive: true });
  const deadline = Date.now() + 300_000;
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      return;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    const holder = lockHolder();
    if (holder === 'gone') rmSync(lock, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`another build holds ${lock} (pid ${holder}); remove it if no build is running`);
    else sleep(100);
  }
}

async function compileAll(sources, report) {
  const swc = createRequire(import.meta.url)('@swc/core');
  const failures = [];
  let done = 0;
  const queue = [...sources];
  const worker = async () => {
    for (let source = queue.shift(); source; source = queue.shift()) {
      const output = outputOf(source);
      try {
        const { code, map } = await swc.transformFile(source, { ...SWC_OPTIONS, filename: source, sourceFileName: relative(dirname(output), source) });
        mkdirSync(dirname(output), { recursive: true });
        writeFileSync(output, `${code}\n//# sourceMappingURL=${output.slice(dirname(output).length + 1)}.map\n`);
        if (map) writeFileSync(`${output}.map`, map);
      } catch (error) {
        failures.push(`${relative(root, source)}: ${error instanceof Error ? error.message : String(error)}`);
      }
      report(++done, sources.length);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return failures;
}

/** Outputs whose source is gone (deleted, renamed, now a test) are removed, as a clean build would. */
function removeOrphans() {
  for (const folder of SOURCE_ROOTS) {
    const out = join(dist, folder);
    if (!existsSync(out)) continue;
    for (const file of walk(out)) {
      const source = join(root, relative(dist, file)).replace(/\.js(\.map)?$/, '.ts');
      if (!existsSync(source) || !isCompiled(source)) rmSync(file);
    }
  }
}

/** Dated from the build's start: a file saved while it ran is built by the next one. */
function writeStamp(startedAt, what) {
  writeFileSync(stamp, `${what}\n`);
  utimesSync(stamp, new Date(startedAt), new Date(startedAt));
}

/**
 * Builds what changed since the last build, saying so on `out` (stdout for `npm start`, stderr for the admin
 * command line, whose stdout is its answer); nothing is said when nothing changed. `clean`: everything,
 * from an empty dist/. Returns false when the build failed (the reason said on `out`).
 */
export async function buildIfChanged({ out = process.stdout, clean = false } = {}) {
  if (!clean && !changedSince(builtAt())) return true;
  takeLock();
  try {
    const previous = clean ? 0 : builtAt();
    if (!changedSince(previous)) return true; // built by another process meanwhile
    const startedAt = Date.now();
    const everything = previous === 0 || SETTINGS.some((file) => newest(join(root, file)) > previous);
    if (clean) for (const folder of SOURCE_ROOTS) rmSync(join(dist, folder), { recursive: true, force: true });
    const sources = SOURCE_ROOTS.flatMap((folder) => walk(join(root, folder))).filter(isCompiled);
    const stale = everything ? sources : sources.filter((source) => statSync(source).mtimeMs > previous || !existsSync(outputOf(source)));
    if (stale.length === 0) {
      // Only deletions or renames of folders: nothing to compile, nothing to say.
      removeOrphans();
      writeStamp(startedAt, 'removed the outputs of deleted files');
      return true;
    }
    out.write(
      clean
        ? `Building the service: ${stale.length} files…\n`
        : previous === 0
          ? `Building the service (first build: ${stale.length} files; later builds compile only what changed)…\n`
          : `Building what changed since the last build: ${stale.length} of ${sources.length} files…\n`,
    );
    const live = out.isTTY === true;
    const failures = await compileAll(stale, (done, total) => {
      if (live && (done % 10 === 0 || done === total)) out.write(`\r  ${done}/${total} files`);
    });
    if (live) out.write('\r\x1b[K');
    if (failures.length > 0) {
      out.write(`${failures.join('\n')}\nThe build failed (above): nothing was started.\n`);
      return false;
    }
    removeOrphans();
    writeStamp(startedAt, `built ${stale.length} files in ${Date.now() - startedAt} ms`);
    out.write(`Built ${stale.length} files in ${((Date.now() - startedAt) / 1000).toFixed(1)} s (types are checked by npm run typecheck).\n`);
    return true;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (!(await buildIfChanged({ clean: process.argv.includes('--clean') }))) process.exit(1);
}
