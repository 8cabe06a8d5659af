/** The benchmark's child processes: compiled servers started as in production, and a Redis of its own. */
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { freePort } from '../../src/common/net';

export const ROOT = resolve(__dirname, '../..');

/** The Node flags of `npm run start:prod` (package.json), so the service runs here as it does there. */
export const PRODUCTION_NODE_FLAGS = productionNodeFlags();

function productionNodeFlags(): string[] {
  const scripts = (JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
  const match = /^node ((?:--\S+ )*)dist\/src\/main$/.exec(scripts['start:prod']);
  if (!match) throw new Error(`start:prod is not "node [flags] dist/src/main": ${scripts['start:prod']}`);
  return match[1].trim().split(' ').filter(Boolean);
}

/** Starts `command` and resolves once `ready` answers (a URL polled, or a line of its output). */
function startProcess(command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp | string, name: string): Promise<ChildProcess> {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise<ChildProcess>((resolveReady, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready instanceof RegExp && ready.test(output)) resolveReady(child);
    };
    if (typeof ready === 'string') {
      const poll = () =>
        fetch(ready).then(
          (res) => (res.ok ? resolveReady(child) : setTimeout(poll, 200)),
          () => setTimeout(poll, 200),
        );
      poll();
    }
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`${name} exited (${code}):\n${output}`)));
  });
}

/** Where a child runs from: another Node binary, flags before the production ones, another checkout's build. */
export interface ChildRuntime {
  node?: string;
  nodeFlags?: string[];
  /** A checkout (built) whose dist/ holds the script; default this one. */
  root?: string;
}

/** A compiled server script (dist/), run by this Node (or `runtime.node`) with the production flags. */
export function startChild(script: string, args: string[], env: Record<string, string>, ready: RegExp | string, runtime: ChildRuntime = {}): Promise<ChildProcess> {
  const compiled = resolve(runtime.root ?? ROOT, 'dist', script.replace(/\.ts$/, '.js'));
  if (!existsSync(compiled)) throw new Error(`${compiled} is missing: build first (npm run build)`);
  const flags = [...(runtime.nodeFlags ?? []), ...PRODUCTION_NODE_FLAGS];
  return startProcess(runtime.node ?? process.execPath, [...flags, compiled, ...args], { ...process.env, ...env }, ready, script);
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
  child.kill('SIGTERM');
  await exited;
}

export interface BenchRedis {
  url: string;
  /** How the rows name it: the one given in REDIS_URL, or the bench's own. */
  origin: string;
  stop(): Promise<void>;
}

/** REDIS_URL when set; otherwise a redis-server of the bench's own on a free port, without persistence. */
export async function benchRedis(): Promise<BenchRedis> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, origin: 'REDIS_URL', stop: async () => undefined };
  return privateRedis();
}

/** A redis-server of the bench's own on a free port, without persistence; its pid for its CPU time. */
export async function privateRedis(): Promise<BenchRedis & { pid: number }> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  const server = await startProcess('redis-server', args, process.env, /Ready to accept connections/, 'redis-server');
  return { url: `redis://127.0.0.1:${port}`, origin: `own redis-server :${port}`, pid: server.pid!, stop: () => stopChild(server) };
}
