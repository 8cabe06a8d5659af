import { ChildProcess, execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';

export interface ServiceProcess {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  /** Resolves when the output matches. */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export const ROOT = resolve(__dirname, '../..');

/**
 * Runs the real service (src/main.ts) as a child process, as `npm start` would, on a given port;
 * from this checkout, or from `cwd` (a copy of it).
 * `ownProcessGroup`: as the foreground job of a terminal, so a test can signal the whole group as Ctrl-C does.
 */
export async function startServiceProcess(
  env: Record<string, string | undefined>,
  port: number,
  options: { ownProcessGroup?: boolean; cwd?: string; npmStart?: boolean; compiled?: boolean } = {},
): Promise<ServiceProcess> {
  // npmStart: the real `npm start` (build what changed, then the built service), `child` being npm.
  // compiled: the built service (dist/, brought up to date once), as `npm start` runs it, without npm:
  // seconds faster to start than src/ through ts-node.
  if (options.compiled) await buildOnce();
  const [command, args] = options.npmStart
    ? ['npm', ['start']]
    : [process.execPath, options.compiled ? ['dist/src/main'] : ['-r', 'ts-node/register/transpile-only', 'src/main.ts']];
  const child = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    detached: options.ownProcessGroup ?? false,
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<number | null>((resolveExit) => child.on('exit', (code) => resolveExit(code)));

  const waitFor = (pattern: RegExp, timeoutMs = 45_000) =>
    new Promise<RegExpMatchArray>((resolveMatch, reject) => {
      const check = () => {
        const match = output.match(pattern);
        if (match) {
          listeners.delete(check);
          clearTimeout(timer);
          resolveMatch(match);
        }
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`Timed out waiting for ${pattern} in service output:\n${output}`));
      }, timeoutMs);
      listeners.add(check);
      void exited.then((code) => {
        if (listeners.has(check)) {
          listeners.delete(check);
          clearTimeout(timer);
          reject(new Error(`Service exited (${code}) before ${pattern}:\n${output}`));
        }
      });
      check();
    });

  return {
    child,
    baseUrl: `http://127.0.0.1:${port}`,
    output: () => output,
    waitFor,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

let built: Promise<void> | undefined;

/** dist/ up to date with the sources (tools/start/build-if-changed.mjs), once per test file. */
function buildOnce(): Promise<void> {
  built ??= new Promise((resolveBuild, reject) =>
    execFile(process.execPath, ['tools/start/build-if-changed.mjs'], { cwd: ROOT }, (error, stdout, stderr) =>
      error ? reject(new Error(`the build failed:\n${stdout}${stderr}`)) : resolveBuild(),
    ),
  );
  return built;
}

export { freePort } from '../../src/common/net';
