import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * `npm run admin` (tools/start/admin.mjs) in a copy of the checkout: compiled code, built first only when a
 * source changed, saying so on stderr; --help without Nest. No database: --help and usage errors need none.
 */
const ROOT = resolve(__dirname, '..', '..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function node(cwd: string, args: string[]): Promise<Run> {
  return new Promise((done) => {
    execFile(process.execPath, args, { cwd, env: { ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' }, timeout: 60_000 }, (error, stdout, stderr) =>
      done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('npm run admin (tools/start/admin.mjs)', () => {
  let checkout: string;
  beforeAll(() => {
    checkout = mkdtempSync(join(tmpdir(), 'pf-admin-launcher-'));
    for (const entry of ['src', 'migrations', 'tools', 'package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) {
      cpSync(join(ROOT, entry), join(checkout, entry), { recursive: true });
    }
    symlinkSync(join(ROOT, 'node_modules'), join(checkout, 'node_modules'));
  });
  afterAll(() => rmSync(checkout, { recursive: true, force: true }));

  it('builds on the first run, not on the next, and again only what changed, saying so on stderr', async () => {
    const first = await node(checkout, ['tools/start/admin.mjs', '--help']);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^usage: npm run admin -- <command>/);
    expect(first.stderr).toMatch(/^Building the service \(first build: \d+ files; later builds compile only what changed\)…\nBuilt \d+ files in [\d.]+ s/);
    expect(existsSync(join(checkout, 'dist/tools/admin-cli.js'))).toBe(true);

    const second = await node(checkout, ['tools/start/admin.mjs', '--help']);
    expect(second).toEqual({ code: 0, stdout: first.stdout, stderr: '' });

    // An edited file and a new one (both dated after the last build began)…
    utimesSync(join(checkout, 'tools/admin-cli/args.ts'), new Date(), new Date());
    writeFileSync(join(checkout, 'src/leftover.ts'), 'export const leftover = 1;\n');
    const third = await node(checkout, ['tools/start/admin.mjs', 'frobnicate']);
    expect(third.code).toBe(2);
    expect(third.stderr).toMatch(/^Building what changed since the last build: 2 of \d+ files…\nBuilt 2 files in [\d.]+ s[^\n]*\nerror: unknown command "frobnicate"/);
    expect(existsSync(join(checkout, 'dist/src/leftover.js'))).toBe(true);
    // …and a deleted one: its output goes, silently (nothing to compile).
    unlinkSync(join(checkout, 'src/leftover.ts'));
    const fourth = await node(checkout, ['tools/start/admin.mjs', '--help']);
    expect(fourth).toEqual({ code: 0, stdout: first.stdout, stderr: '' });
    expect(existsSync(join(checkout, 'dist/src/leftover.js'))).toBe(false);
  }, 60_000);

  it('answers --help and a usage error without loading Nest, TypeORM or libphonenumber', async () => {
    // The first case built dist/; this one lists what a run loads.
    const preload = join(checkout, 'list-modules.js');
    writeFileSync(preload, `process.on('exit', () => process.stderr.write(Object.keys(require.cache).join('\\n')));\n`);
    for (const args of [['--help'], ['top-up', '--help'], ['top-up', 'x']]) {
      const run = await node(checkout, ['--require', preload, 'tools/start/admin.mjs', ...args]);
      const loaded = run.stderr.split('\n').filter((path) => path.includes('node_modules'));
      expect({ args, loaded }).toEqual({ args, loaded: [] });
    }
  }, 60_000);
});
