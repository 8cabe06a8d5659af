import { existsSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Client } from 'pg';
import request from 'supertest';
import { migrate } from '../src/database/database-runtime';
import { isProcessAlive, temporaryDataDir } from '../src/database/embedded-postgres';
import { eventually } from './helpers/eventually';
import { freePort, PROCESS_TEST_TIMEOUT_MS, START_DEADLINE_MS, startServiceProcess } from './helpers/service-process';
import { startTestApp } from './helpers/test-app';

/** An empty database on the e2e server, and a way to drop it. */
async function freshDatabase(name: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const server = new URL(process.env.DATABASE_URL!);
  const admin = new Client({ connectionString: server.toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server.toString());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

function postmasterPid(dataDir: string): number {
  return Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
}

/** The process group and session of a process (fields 5 and 6 of /proc/<pid>/stat). */
function groupAndSession(pid: number): { group: number; session: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const [, , group, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number);
  return { group, session };
}


describe('starting the service (npm start)', () => {
  it('with no DATABASE_URL: starts an embedded Postgres, migrates, prints a working demo key, stops cleanly', async () => {
    const dataDir = temporaryDataDir('startup');
    const port = await freePort();
    const service = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: dataDir }, port);
    try {
      const [, apiKey] = await service.waitFor(/(pf_live_[0-9A-Za-z]{32})/);
      await service.listening();
      // Logs are JSON here (not a terminal): every line of the output is one JSON object, the ready
      // banner included, and Nest's module/route narration is not among them (debug level).
      const lines = service.output().trim().split('\n').filter((line) => !line.startsWith('npm '));
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
      expect(service.output()).not.toMatch(/InstanceLoader|RouterExplorer|RoutesResolver|Mapped \{/);
      const ready = lines.map((line) => JSON.parse(line) as Record<string, string>).filter((line) => /Phone Filter is ready/.test(line.msg));
      expect(ready).toHaveLength(1);
      expect(ready[0].docs).toBe(`${service.baseUrl.replace('127.0.0.1', 'localhost')}/docs (Swagger UI)`);
      expect(ready[0].demo_key).toMatch(new RegExp(`^${apiKey} \\(10000 credits`));
      expect(ready[0].admin_api).toMatch(/^off: start with ADMIN_TOKEN=/);
      expect(ready[0].try).toContain('+447400123456');
      const balance = await request(service.baseUrl).get('/api/v1/balance').set('Authorization', `Bearer ${apiKey}`);
      expect(balance.status).toBe(200);
      expect(balance.body).toEqual({ balance: 10_000 });
      await request(service.baseUrl).get('/docs').expect(200);
      const postmasterPid = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
      expect(isProcessAlive(postmasterPid)).toBe(true);

      expect(await service.stop('SIGTERM')).toBe(0);
      expect(isProcessAlive(postmasterPid)).toBe(false);
      expect(existsSync(`${dataDir}/PG_VERSION`)).toBe(true);

      // A second start reuses the data: no second demo account, the first key still works.
      const again = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: dataDir }, port);
      try {
        await again.listening();
        expect(again.output()).not.toMatch(/pf_live_/);
        // Later starts say how to get a new key for the demo account, as a command that works.
        const [, issueKey, accountId] = await again.waitFor(/(npm run admin -- issue-key ([0-9a-f-]{36}))/);
        expect(issueKey).toBe(`npm run admin -- issue-key ${accountId}`);
        const me = await request(again.baseUrl).get('/api/v1/balance').set('Authorization', `Bearer ${apiKey}`);
        expect(me.status).toBe(200);
        await request(again.baseUrl).get('/api/v1/balance').set('Authorization', `Bearer ${apiKey}`).expect(200);
      } finally {
        await again.stop();
      }
    } finally {
      await service.stop('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
      await rm(`${dataDir}.password`, { force: true });
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it('after a SIGKILL: the next start stops the orphaned postmaster and comes up', async () => {
    const dataDir = temporaryDataDir('sigkill');
    const port = await freePort();
    const first = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: dataDir }, port);
    try {
      await first.listening();
      const postmasterPid = Number(readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
      await first.stop('SIGKILL');
      const second = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: dataDir }, port);
      try {
        await second.listening();
        expect(isProcessAlive(postmasterPid)).toBe(false);
        await request(second.baseUrl).get('/health/ready').expect(200);
      } finally {
        expect(await second.stop()).toBe(0);
      }
    } finally {
      await first.stop('SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
      await rm(`${dataDir}.password`, { force: true });
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it('runs its embedded PostgreSQL outside the terminal\'s process group, restarts it when it dies, and on Ctrl-C stops it last', async () => {
    const dataDir = temporaryDataDir('lifecycle');
    // As `npm start` in a terminal: the service leads the foreground process group that Ctrl-C signals.
    const service = await startServiceProcess({ DATABASE_URL: '', EMBEDDED_PG_DIR: dataDir }, await freePort(), { ownProcessGroup: true });
    try {
      const [, apiKey] = await service.waitFor(/(pf_live_[0-9A-Za-z]{32})/);
      await service.listening();
      const auth = { Authorization: `Bearer ${apiKey}` };
      const firstServer = postmasterPid(dataDir);
      expect(groupAndSession(firstServer).group).not.toBe(service.child.pid);
      expect(groupAndSession(firstServer).session).not.toBe(groupAndSession(service.child.pid!).session);

      process.kill(firstServer, 'SIGKILL'); // the database dies under the running service
      await service.waitFor(/embedded PostgreSQL exited unexpectedly/);
      await service.waitFor(/embedded PostgreSQL is running again/);
      const secondServer = postmasterPid(dataDir);
      expect(secondServer).not.toBe(firstServer);
      const ready = await eventually(async () => (await request(service.baseUrl).get('/health/ready')).status, (status) => status === 200, START_DEADLINE_MS);
      expect(ready).toBe(200);
      await request(service.baseUrl).post('/api/v1/filter').set(auth).send({ phone: '+447400123456' }).expect(200);

      const before = service.output().length;
      process.kill(-service.child.pid!, 'SIGINT'); // Ctrl-C: the whole foreground process group
      expect(await service.exited).toBe(0);
      expect(isProcessAlive(secondServer)).toBe(false);
      expect(service.output()).toMatch(/SIGINT: shutting down/);
      expect(service.output()).toMatch(/"msg":"Stopped"/);
      // The database went last, once nothing was connected to it.
      expect(service.output().slice(before)).not.toMatch(/terminating connection|administrator command/);
    } finally {
      await service.stop('SIGKILL');
      const leftover = existsSync(`${dataDir}/postmaster.pid`) ? postmasterPid(dataDir) : undefined;
      if (leftover && isProcessAlive(leftover)) process.kill(leftover, 'SIGKILL');
      await rm(dataDir, { recursive: true, force: true });
      await rm(`${dataDir}.password`, { force: true });
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it('with DATABASE_URL: three instances started together on an empty database all come up', async () => {
    const database = await freshDatabase(`phone_filter_together_${process.pid}`);
    const instances = await Promise.all([0, 1, 2].map(async () => startServiceProcess({ DATABASE_URL: database.url, REDIS_URL: '' }, await freePort())));
    try {
      await Promise.all(instances.map((instance) => instance.listening()));
      for (const instance of instances) await request(instance.baseUrl).get('/health/ready').expect(200);
      expect(instances.filter((instance) => /Applied migrations/.test(instance.output()))).toHaveLength(1);
      expect(instances.map((instance) => instance.output()).join('\n')).not.toMatch(/deadlock/);
    } finally {
      await Promise.all(instances.map((instance) => instance.stop()));
      await database.drop();
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it('three apps initialised at the same moment on a freshly migrated database set the bulk queue up once, without a deadlock', async () => {
    const database = await freshDatabase(`phone_filter_queue_setup_${process.pid}`);
    await migrate(database.url);
    // In one process the three set-ups interleave closely (child processes start a few ms apart).
    const started = await Promise.allSettled([0, 1, 2].map(() => startTestApp({ DATABASE_URL: database.url, REDIS_URL: '' })));
    try {
      expect(started.map((result) => (result.status === 'rejected' ? String(result.reason) : 'started'))).toEqual(['started', 'started', 'started']);
    } finally {
      await Promise.all(started.map((result) => (result.status === 'fulfilled' ? result.value.close() : undefined)));
      await database.drop();
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it('with DATABASE_URL: migrates an empty database and serves', async () => {
    const database = await freshDatabase(`phone_filter_startup_${process.pid}`);
    const service = await startServiceProcess({ DATABASE_URL: database.url }, await freePort());
    try {
      await service.listening();
      expect(service.output()).toMatch(/Applied migrations: InitialSchema/);
      expect(service.output()).not.toMatch(/pf_live_/); // no demo account outside the embedded database
      await request(service.baseUrl).get('/health/ready').expect(200);
      const check = new Client({ connectionString: database.url });
      await check.connect();
      const plans = await check.query(`SELECT name, "limit", window_seconds FROM plans ORDER BY "limit"`);
      await check.end();
      expect(plans.rows).toEqual([
        { name: 'free', limit: 5, window_seconds: 1 },
        { name: 'standard', limit: 50, window_seconds: 1 },
        { name: 'enterprise', limit: 1000, window_seconds: 1 },
      ]);
    } finally {
      await service.stop();
      await database.drop();
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it('a port already in use: one line saying so, exit 1, and the pretty format on request', async () => {
    const first = await startServiceProcess({ LOG_FORMAT: 'pretty' }, await freePort());
    try {
      await first.listening();
      // LOG_FORMAT=pretty: human-readable lines, not JSON, and none of Nest's per-module chatter.
      expect(first.output()).toMatch(/^\[\d\d:\d\d:\d\d\] INFO: \[Bootstrap\] Phone Filter listening on/m);
      expect(first.output()).not.toMatch(/^\{"level"/m);
      expect(first.output()).not.toMatch(/dependencies initialized|Mapped \{/);
      // On a terminal, the readable block; it says the admin API is off and how to turn it on.
      const [block] = await first.waitFor(/Phone Filter is ready\n( {2}.*\n)+\n/);
      expect(block).toMatch(/ {2}Admin API {2}off: start with ADMIN_TOKEN=<16\+ characters> to turn \/admin\/v1 on/);

      const port = Number(new URL(first.baseUrl).port);
      const second = await startServiceProcess({ LOG_FORMAT: 'json' }, port);
      expect(await second.exited).toBe(1);
      const text = second.output();
      expect(text).toContain(`Port ${port} is already in use on 127.0.0.1 (is Phone Filter already running?): stop that process, or start with PORT=${port + 1}.`);
      expect(text).not.toMatch(/EADDRINUSE| {4}at /);
    } finally {
      await first.stop();
    }
  }, PROCESS_TEST_TIMEOUT_MS);

  it('a start-up mistake is one line naming the fix, with no stack: a bad configuration, PostgreSQL not running at DATABASE_URL', async () => {
    const closedPort = await freePort();
    const [badConfig, noDatabase] = await Promise.all([
      startServiceProcess({ PORT: 'abc', PROVIDER: 'carrier-pigeon' }, 1),
      startServiceProcess({ DATABASE_URL: `postgres://postgres:secret-pw@127.0.0.1:${closedPort}/app` }, await freePort()),
    ]);
    expect(await badConfig.exited).toBe(1);
    expect(await noDatabase.exited).toBe(1);
    // Not a terminal: the line is JSON like the logs (level fatal), and the only line of a configuration mistake.
    const fatal = (output: string) => output.trim().split('\n').map((line) => JSON.parse(line) as { level: string; msg: string; stack?: string }).filter((line) => line.level === 'fatal');
    const [config] = fatal(badConfig.output());
    expect(config.msg).toMatch(/^Invalid configuration:\n {2}- PORT="abc": PORT must be an integer number\n {2}- PROVIDER="carrier-pigeon": PROVIDER must be one of/);
    expect(fatal(noDatabase.output())).toEqual([
      expect.objectContaining({
        msg: `PostgreSQL at 127.0.0.1:${closedPort} refused the connection (DATABASE_URL): is PostgreSQL running at 127.0.0.1:${closedPort}? Or unset DATABASE_URL to use the embedded one.`,
      }),
    ]);
    for (const output of [badConfig.output(), noDatabase.output()]) expect(output).not.toMatch(/ {4}at |secret-pw|"stack"/);
  }, PROCESS_TEST_TIMEOUT_MS);
});
