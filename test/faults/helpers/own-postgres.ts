import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Client } from 'pg';
import { freePort } from '../../../src/common/net';
import { migrate } from '../../../src/database/database-runtime';
import { isProcessAlive, temporaryDataDir } from '../../../src/database/embedded-postgres';
import { PostgresServer } from '../../../src/database/postgres-server';
import { reachableBinaries } from '../../../src/database/embedded-postgres-staging';
import { eventually } from '../../helpers/eventually';
import { START_DEADLINE_MS } from '../../helpers/service-process';

/**
 * A PostgreSQL the test owns, on a port of its own (the project's embedded binaries), migrated, that
 * it can kill -9 and start again while the service runs against it.
 */
export interface OwnPostgres {
  url: string;
  /** kill -9 of the postmaster (its backends follow). */
  kill(): Promise<void>;
  /** SIGSTOP / SIGCONT of the server and its backends: a database that no longer answers, connections open. */
  freeze(): void;
  thaw(): void;
  /** Starts it again on the same port and data, once the dead server's backends are gone. */
  restart(): Promise<void>;
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

export async function startOwnPostgres(): Promise<OwnPostgres> {
  const dataDir = temporaryDataDir('faults');
  const password = randomBytes(12).toString('hex');
  const server = new PostgresServer({ dataDir, port: await freePort(), password, fast: true, binariesDir: reachableBinaries().dir });
  await server.initialise();
  await server.start();
  const url = `postgres://postgres:${password}@127.0.0.1:${server.port}/postgres`;
  await migrate(url);
  const query = async <T>(sql: string, params: unknown[] = []): Promise<T[]> => {
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end();
    }
  };
  return {
    url,
    query,
    kill: async () => {
      const pid = server.pid;
      server.kill();
      if (pid !== undefined) await eventually(() => isProcessAlive(pid), (alive) => !alive, START_DEADLINE_MS, 25);
    },
    // Each backend runs in a session of its own (PostgreSQL's children call setsid): signal them one by one.
    freeze: () => [server.pid!, ...childrenOf(server.pid!)].forEach((pid) => process.kill(pid, 'SIGSTOP')),
    thaw: () => [server.pid!, ...childrenOf(server.pid!)].forEach((pid) => process.kill(pid, 'SIGCONT')),
    restart: async () => {
      // It starts once the dead server's backends have let go of its shared memory.
      const failure = await eventually(
        () => server.start().then(() => undefined, (error: Error) => error),
        (error) => error === undefined,
        START_DEADLINE_MS,
        250,
      );
      if (failure) throw failure;
    },
    close: async () => {
      await server.stop(5000);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

function childrenOf(parent: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent) children.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return children;
}

