import { ChildProcess, spawn } from 'node:child_process';
import { freePort } from '../../../src/common/net';

/** A Redis the test starts on a port of its own, and can stop and start again (no persistence). */
export interface OwnRedis {
  url: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** SIGSTOP: connections stay open and nothing answers (a hung Redis, the worst case for clients). */
  freeze(): void;
  thaw(): void;
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = () =>
    new Promise<void>((ready, failed) => {
      const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      const onOutput = (data: Buffer) => {
        output += data.toString();
        if (/Ready to accept connections/.test(output)) {
          child = server;
          ready();
        }
      };
      server.stdout.on('data', onOutput);
      server.stderr.on('data', onOutput);
      server.once('error', failed);
      server.once('exit', (code) => {
        if (child !== server) failed(new Error(`redis-server exited (${code}) before it was ready:\n${output}`));
        child = undefined;
      });
    });
  const stop = async () => {
    const server = child;
    if (!server) return;
    const exited = new Promise((done) => server.once('exit', done));
    server.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    stop,
    freeze: () => child?.kill('SIGSTOP'),
    thaw: () => child?.kill('SIGCONT'),
  };
}
