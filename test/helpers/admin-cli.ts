import { execFile } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

function run(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      args,
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: process.env.DATABASE_URL, ...env }, timeout: 120_000 },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

let built: Promise<CliRun> | undefined;

/**
 * `npm run admin -- ...` as a child process against the test database, the way an operator runs it: the
 * compiled command line (tools/start/admin.mjs, without npm around it). dist/ is brought up to date once
 * first, so that no command's stderr carries the build's lines.
 */
export function cli(...args: string[]): Promise<CliRun> {
  return cliWith({}, ...args);
}

/** `cli` with variables added to the environment. */
export async function cliWith(env: Record<string, string>, ...args: string[]): Promise<CliRun> {
  built ??= run(['tools/start/build-if-changed.mjs']);
  const build = await built;
  if (build.code !== 0) throw new Error(`the build failed:\n${build.stdout}${build.stderr}`);
  return run(['tools/start/admin.mjs', ...args], env);
}

/** `label: value` lines of the human output. */
export function field(output: string, label: string): string {
  const match = new RegExp(`^${label}: (.*)$`, 'm').exec(output);
  if (!match) throw new Error(`no "${label}:" line in:\n${output}`);
  return match[1];
}
