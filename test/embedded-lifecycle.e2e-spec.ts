import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { AddressInfo, createServer } from 'node:net';
import { startEmbeddedPostgres, temporaryDataDir } from '../src/database/embedded-postgres';
import { eventually } from './helpers/eventually';
import { gone, postgresOf } from './helpers/processes';
import { freePort, PROCESS_TEST_TIMEOUT_MS, START_DEADLINE_MS, startServiceProcess } from './helpers/service-process';

async function removeCluster(dataDir: string): Promise<void> {
  for (const pid of postgresOf(dataDir)) process.kill(pid, 'SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
  await rm(`${dataDir}.password`, { force: true });
}

describe('the embedded PostgreSQL never outlives the service', () => {
  it('a SIGTERM during the start-up (right after the database is up) stops the database too', async () => {
    const dataDir = temporaryDataDir('early-signal');
    const service = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: dataDir }, await freePort());
    try {
      await service.waitFor(/using the embedded PostgreSQL/);
      const postmaster = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
      expect(await eventually(async () => gone(postmaster), (isGone) => isGone, START_DEADLINE_MS)).toBe(true);
      expect(postgresOf(dataDir)).toEqual([]);
    } finally {
      await service.stop('SIGKILL');
      await removeCluster(dataDir);
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it('a start-up that fails (its port taken) stops the database before exiting 1', async () => {
    const dataDir = temporaryDataDir('failed-start');
    const taken = createServer();
    await new Promise<void>((listening) => taken.listen(0, '127.0.0.1', listening));
    const service = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: dataDir }, (taken.address() as AddressInfo).port);
    try {
      expect(await service.exited).toBe(1);
      expect(service.output()).toMatch(/is already in use/);
      expect(service.output()).toMatch(/using the embedded PostgreSQL/);
      expect(postgresOf(dataDir)).toEqual([]);
    } finally {
      await service.stop('SIGKILL');
      taken.close();
      await removeCluster(dataDir);
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it('a clean stop right after start-up never has the database end a session (no "terminating connection"), 6 times', async () => {
    const dataDir = temporaryDataDir('clean-stop');
    try {
      for (let round = 1; round <= 6; round++) {
        const service = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: dataDir }, await freePort());
        try {
          await service.listening();
          service.child.kill('SIGTERM');
          expect(await service.exited).toBe(0);
          expect(service.output()).not.toMatch(/terminating connection|administrator command/);
          expect(postgresOf(dataDir)).toEqual([]);
        } finally {
          await service.stop('SIGKILL');
        }
      }
    } finally {
      await removeCluster(dataDir);
    }
  }, 3 * PROCESS_TEST_TIMEOUT_MS);

  it('a stop while the supervisor is starting the server again ends that server, and once it resolves nothing starts another', async () => {
    const dataDir = temporaryDataDir('stop-in-restart');
    let killed = false;
    let stopped: Promise<void> | undefined;
    const database = await startEmbeddedPostgres({
      dataDir,
      persistent: true, // the data stays: a server started behind stop()'s back would come up and stay
      fast: true,
      // The supervisor's new server has written its first line: it is starting, not yet ready. Stop now.
      log: (line) => {
        if (killed && !stopped && /starting PostgreSQL/.test(line)) stopped = database.stop(5000);
      },
    });
    try {
      const first = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
      killed = true;
      process.kill(first, 'SIGKILL');
      expect(await eventually(() => stopped !== undefined, (called) => called, START_DEADLINE_MS)).toBe(true);
      // stop() resolves once the supervisor's attempt is over too: no server may come up after it.
      await stopped;
      expect(postgresOf(dataDir)).toEqual([]);
      expect(existsSync(`${dataDir}/postmaster.pid`)).toBe(false);
    } finally {
      await removeCluster(dataDir);
    }
  }, PROCESS_TEST_TIMEOUT_MS);
});
