import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { delimiter, join } from 'node:path';
import { freePort } from '../../src/common/net';
import { eventually } from './eventually';

/**
 * The Redis the e2e suites that need one use (rate limits shared between instances, the shared
 * lookup cache). The global setup finds it once:
 *   1. REDIS_URL, or redis://127.0.0.1:6379 when unset, if it answers PING;
 *   2. else a `redis-server` of our own on a free port, when the binary is on PATH (stopped by the
 *      global teardown);
 *   3. else nothing, and the suites that need Redis fail at once with one line saying what to install.
 * The answer travels to the test workers as TEST_REDIS_URL (or TEST_REDIS_MISSING). REDIS_URL itself
 * is left alone: suites that do not ask for Redis run as configured.
 */
export interface TestRedis {
  url?: string;
  /** Set when we started the server. */
  pid?: number;
  message: string;
}

export async function ensureTestRedis(env: NodeJS.ProcessEnv = process.env): Promise<TestRedis> {
  const configured = env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (await answersPing(configured)) return { url: configured, message: `Redis at ${configured}` };
  const binary = onPath('redis-server', env.PATH);
  if (!binary) {
    return {
      message:
        `Redis is needed by this suite and none answers at ${configured}; install redis-server ` +
        `(apt-get install redis-server, brew install redis) or set REDIS_URL to a running Redis.`,
    };
  }
  const port = await freePort();
  const child = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
    detached: true,
  });
  child.unref();
  const url = `redis://127.0.0.1:${port}`;
  await eventually(() => answersPing(url), (answers) => answers, 60_000, 50);
  if (!(await answersPing(url))) {
    if (child.pid) process.kill(child.pid, 'SIGKILL');
    return { message: `Redis is needed by this suite; none answers at ${configured} and ${binary} did not start on port ${port}.` };
  }
  return { url, pid: child.pid, message: `no Redis at ${configured}: started ${binary} on ${url}` };
}

/** For a suite that needs Redis: its URL, or an error of one line saying what to install. */
export function testRedisUrl(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TEST_REDIS_URL) return env.TEST_REDIS_URL;
  throw new Error(env.TEST_REDIS_MISSING ?? 'Redis: TEST_REDIS_URL is unset (the e2e global setup sets it; run through jest --config jest.config.js).');
}

/** One PING over a raw socket: no client left retrying in the background when Redis is absent. */
export function answersPing(url: string, timeoutMs = 1000): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolveAnswer) => {
    const socket = connect({ host: hostname || '127.0.0.1', port: Number(port || 6379) });
    const done = (answer: boolean) => {
      socket.destroy();
      clearTimeout(timer);
      resolveAnswer(answer);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    // +PONG, or -NOAUTH from a Redis with a password (it answers: the URL carries the password).
    socket.once('data', (data) => done(/^(\+PONG|-NOAUTH)/.test(data.toString())));
  });
}

function onPath(binary: string, path = ''): string | undefined {
  return path
    .split(delimiter)
    .map((folder) => join(folder, binary))
    .find((candidate) => existsSync(candidate));
}
