import { ChildProcess, execFile, spawn } from 'node:child_process';
import { resolve } from 'node:path';

export interface ServiceProcess {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  /** Resolves when the output matches; rejects when the service exits first or the deadline passes. */
  waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>;
  /** Resolves once the service listens (its "listening on" line). */
  listening: () => Promise<void>;
  exited: Promise<number | null>;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export const ROOT = resolve(__dirname, '../..');

/**
 * How long a start-up may take before a test gives up on it. A start of the built service takes 2 s of
 * CPU; on a machine loaded at 20 (two busy loops beside other test runs) that was 19 s of wall time, and
 * a first start also initialises an embedded PostgreSQL. A deadline is only ever reached by a failure.
 */
export const START_DEADLINE_MS = 180_000;
/** A process-level test that starts the service once or twice. */
export const PROCESS_TEST_TIMEOUT_MS = 2 * START_DEADLINE_MS;

let built: Promise<void> | undefined;

/**
 * The service compiled into dist/ (what `npm start` runs), built once per test file and only when a
 * source changed (tools/start/build-if-changed.mjs holds a lock, so files building at once build once).
 * Starting it through ts-node took 9-10 s of CPU a start, five times the built service's.
 */
export function buildService(): Promise<void> {
  built ??= new Promise((resolveBuild, reject) =>
    execFile(process.execPath, ['tools/start/build-if-changed.mjs'], { cwd: ROOT, timeout: START_DEADLINE_MS }, (error, stdout, stderr) =>
      error ? reject(new Error(`the build failed:\n${stdout}${stderr}`)) : resolveBuild(),
    ),
  );
  return built;
}

/**
 * Runs the real service (dist/src/main.js, built from this checkout's sources) as a child process, as
 * `npm start` would, on a given port; from this checkout, or from `cwd` (a copy of it, with its own dist/).
 * `ownProcessGroup`: as the foreground job of a terminal, so a test can signal the whole group as Ctrl-C does.
 * `npmStart`: the real `npm start` (build what changed, then the built service), `child` being npm.
 */
export async function startServiceProcess(
  env: Record<string, string | undefined>,
  port: number,
  options: {
    ownProcessGroup?: boolean;
    cwd?: string;
    npmStart?: boolean;
    /** The built service is what always runs now; the option stays for the callers that asked for it. */
    compiled?: boolean;
  } = {},
): Promise<ServiceProcess> {
  await buildService();
  const [command, args] = options.npmStart ? ['npm', ['start']] : [process.execPath, ['--enable-source-maps', 'dist/src/main.js']];
  const child = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    detached: options.ownProcessGroup ?? false,
    // No readiness probe behind a test's back (as test-app.ts): it is a request to each upstream every
    // 10 s, which tests count (privacy-erasure's last count read 4 for 2 in CI's loaded second pass).
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', READINESS_PROBE_INTERVAL_MS: '3600000', ...env },
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

  const waitFor = (pattern: RegExp, timeoutMs = START_DEADLINE_MS) =>
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
    listening: () => waitFor(/listening on/).then(() => undefined),
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

export { freePort } from '../../src/common/net';
