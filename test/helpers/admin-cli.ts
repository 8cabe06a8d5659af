import { execFile } from 'node:child_process';
import { resolve } from 'node:path';

const ROOT = resolve(__dirname, '..', '..');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `npm run admin -- ...` as a child process against the test database, the way an operator runs it. */
export function cli(...args: string[]): Promise<CliRun> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      ['-r', 'ts-node/register/transpile-only', 'tools/admin-cli.ts', ...args],
      { cwd: ROOT, env: { ...process.env, DATABASE_URL: process.env.DATABASE_URL }, timeout: 60_000 },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** `label: value` lines of the human output. */
export function field(output: string, label: string): string {
  const match = new RegExp(`^${label}: (.*)$`, 'm').exec(output);
  if (!match) throw new Error(`no "${label}:" line in:\n${output}`);
  return match[1];
}
