import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { freePort } from '../../src/common/net';
import { eventually } from './eventually';
import { START_DEADLINE_MS } from './service-process';

/** Where a `pgbouncer` binary is (PATH, or Debian's /usr/sbin), or undefined. */
export function findPgBouncer(): string | undefined {
  for (const candidate of ['pgbouncer', '/usr/sbin/pgbouncer', '/usr/local/bin/pgbouncer']) {
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  return undefined;
}

export const PGBOUNCER_MISSING =
  'PgBouncer tests did not run: no `pgbouncer` binary. Install it (Debian/Ubuntu: `apt-get install -y pgbouncer`) to run them.';

export interface PgBouncer {
  /** DATABASE_URL through the pooler. */
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/**
 * A real PgBouncer the test starts on a free port, in front of the PostgreSQL of `databaseUrl`, in
 * transaction pooling mode with a small server pool (auth_type trust: the suite's PostgreSQL trusts
 * local connections). As root it runs as the `postgres` user (PgBouncer refuses to run as root).
 */
export async function startPgBouncer(binary: string, databaseUrl: string, options: { poolSize: number }): Promise<PgBouncer> {
  const target = new URL(databaseUrl);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pf-pgbouncer-'));
  chmodSync(dir, 0o755);
  const user = decodeURIComponent(target.username || 'postgres');
  writeFileSync(join(dir, 'users.txt'), `"${user}" "${decodeURIComponent(target.password)}"\n`, { mode: 0o644 });
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${target.hostname} port=${target.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      target.password ? 'auth_type = plain' : 'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize}`,
      'max_client_conn = 500',
      'ignore_startup_parameters = extra_float_digits,options',
      'server_reset_query =',
      'log_connections = 0',
      'log_disconnections = 0',
    ].join('\n'),
    { mode: 0o644 },
  );
  const args = [...(process.getuid?.() === 0 ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')];
  const child: ChildProcess = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (data: Buffer) => (output += data.toString()));
  child.stderr!.on('data', (data: Buffer) => (output += data.toString()));
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((done) => child.once('exit', done));
      child.kill('SIGINT');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // Ready once it answers a query (or gone, if it exited): a start-up deadline only a failure reaches.
  const answers = async (): Promise<Error | undefined> => {
    const client = new Client({ connectionString: url.toString(), connectionTimeoutMillis: 10_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return undefined;
    } catch (error) {
      return error as Error;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const failure = await eventually(answers, (error) => error === undefined || child.exitCode !== null, START_DEADLINE_MS, 100);
  if (failure) {
    await stop();
    throw new Error(`pgbouncer did not start: ${failure.message}\n${output}`);
  }
  return { url: url.toString(), output: () => output, stop };
}
