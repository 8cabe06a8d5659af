import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { isProcessAlive, temporaryDataDir } from '../src/database/embedded-postgres';
import { eventually } from './helpers/eventually';
import { childrenOf, gone, postgresOf } from './helpers/processes';
import { freePort, PROCESS_TEST_TIMEOUT_MS, ServiceProcess, START_DEADLINE_MS, startServiceProcess } from './helpers/service-process';

function commandLine(pid: number): string {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
}

/** `npm start` up and serving: npm's pid, the service's (npm's only child), the postmaster's. */
async function started(service: ServiceProcess, dataDir: string): Promise<{ npm: number; node: number; postmaster: number }> {
  await service.listening(); // npm start builds what changed first: startServiceProcess built it already
  const npm = service.child.pid!;
  const children = childrenOf(npm);
  // npm's child IS the service (sh exec'd it): no shell or `nest start` in between to swallow a signal.
  expect(children).toHaveLength(1);
  expect(commandLine(children[0])).toMatch(/node .*dist\/src\/main/);
  const postmaster = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
  expect(isProcessAlive(postmaster)).toBe(true);
  return { npm, node: children[0], postmaster };
}

async function removeCluster(dataDir: string): Promise<void> {
  for (const pid of postgresOf(dataDir)) process.kill(pid, 'SIGKILL');
  await rm(dataDir, { recursive: true, force: true });
  await rm(`${dataDir}.password`, { force: true });
}

describe('npm start leaves nothing running once stopped the ordinary ways', () => {
  it('kill <pid of npm start> (what `kill %1` does): npm, the service and the embedded PostgreSQL all end, the shutdown runs', async () => {
    const dataDir = temporaryDataDir('npm-kill');
    const service = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: dataDir }, await freePort(), { npmStart: true });
    try {
      const { npm, node, postmaster } = await started(service, dataDir);
      process.kill(npm, 'SIGTERM');
      await service.exited;
      expect(await eventually(() => gone(node) && gone(postmaster), (done) => done, START_DEADLINE_MS)).toBe(true);
      expect(postgresOf(dataDir)).toEqual([]);
      expect(service.output()).toMatch(/SIGTERM: shutting down/);
      expect(service.output()).toMatch(/"msg":"Stopped"/);
    } finally {
      await service.stop('SIGKILL');
      await removeCluster(dataDir);
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it('closing the terminal (SIGHUP to the process group): the service shuts down in order and stops the embedded PostgreSQL', async () => {
    const dataDir = temporaryDataDir('npm-hangup');
    const service = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: dataDir }, await freePort(), { npmStart: true, ownProcessGroup: true });
    try {
      const { npm, node, postmaster } = await started(service, dataDir);
      process.kill(-npm, 'SIGHUP'); // the terminal's hangup reaches its whole foreground job
      await service.exited;
      expect(await eventually(() => gone(node) && gone(postmaster), (done) => done, START_DEADLINE_MS)).toBe(true);
      expect(postgresOf(dataDir)).toEqual([]);
      expect(service.output()).toMatch(/SIGHUP: shutting down/);
    } finally {
      await service.stop('SIGKILL');
      await removeCluster(dataDir);
    }
  }, PROCESS_TEST_TIMEOUT_MS);
});
