import { connect } from 'node:net';
import { createAccount } from './factories/accounts';
import { ledgerState } from './helpers/ledger';
import { freePort, ServiceProcess, startServiceProcess } from './helpers/service-process';
import { startTestApp, TestApp } from './helpers/test-app';
import { hlrLookupsEnv } from './provider-helpers';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { ADMIN_TOKEN, createAccountOver } from './faults/helpers/instances';
import { OwnPostgres, startOwnPostgres } from './faults/helpers/own-postgres';
import { OwnRedis, startOwnRedis } from './faults/helpers/own-redis';

const UPSTREAM_LATENCY_MS = 2500;
const IN_FLIGHT = 8;

/** Resolves true once a TCP connection to the port is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

async function until(probe: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return true;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return false;
}

describe('graceful shutdown on SIGTERM', () => {
  let t: TestApp;
  let sim: UpstreamSimulator;
  beforeAll(async () => {
    t = await startTestApp();
    sim = await startUpstreamSimulator({ latencyMs: UPSTREAM_LATENCY_MS });
  });
  afterAll(async () => {
    await sim.close();
    await t.close();
  });

  it('answers every call in flight, refuses new connections, settles every charge and exits 0', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const port = await freePort();
    const service: ServiceProcess = await startServiceProcess(
      { ...hlrLookupsEnv(sim.url), PROVIDER_TIMEOUT_MS: '20000', SHUTDOWN_TIMEOUT_MS: '15000', REDIS_URL: undefined },
      port,
    );
    try {
      await service.waitFor(/listening on/);
      // fetch keeps its connections alive: the server must close them once their answers are sent.
      const inFlight = Array.from({ length: IN_FLIGHT }, (_, i) =>
        fetch(`${service.baseUrl}/api/v1/filter`, {
          method: 'POST',
          headers: { Authorization: account.auth.Authorization, 'Content-Type': 'application/json' },
          body: JSON.stringify({ phone: `+4474005551${String(i).padStart(2, '0')}` }),
        }).then(
          async (res) => ({ status: res.status, body: (await res.json()) as Record<string, unknown> }),
          (error: Error) => ({ status: 0, body: { error: error.message } }),
        ),
      );
      const charged = await until(async () => (await ledgerState(t.db, account.id)).unsettledCharges === IN_FLIGHT, 10_000);
      expect(charged).toBe(true);
      expect(sim.stats().byPath['/hlr-lookup'] ?? 0).toBeGreaterThan(0);

      service.child.kill('SIGTERM');
      // The listening socket closes at once, while the calls are still waiting on the upstream.
      expect(await until(() => refused(port), 2000)).toBe(true);
      const answers = await Promise.all(inFlight);
      expect(answers.map((answer) => answer.status)).toEqual(Array(IN_FLIGHT).fill(200));
      for (const answer of answers) expect(answer.body).toMatchObject({ status: 'CONNECTED', valid: true });

      expect(await service.exited).toBe(0);
      expect(service.output()).toMatch(/SIGTERM: shutting down; \d+ request\(s\) in flight/);
      expect(service.output()).toMatch(/"msg":"Stopped"/);
    } finally {
      await service.stop('SIGKILL');
    }

    expect(await ledgerState(t.db, account.id)).toEqual({
      balance: 1000 - IN_FLIGHT * 4,
      ledgerSum: 1000 - IN_FLIGHT * 4,
      byType: { TOPUP: 1, CHARGE: IN_FLIGHT },
      unsettledCharges: 0,
    });
  });

  it('cuts requests still running at SHUTDOWN_TIMEOUT_MS, exits 0, and leaves their charges to the sweep', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const port = await freePort();
    const service = await startServiceProcess(
      { ...hlrLookupsEnv(sim.url), PROVIDER_TIMEOUT_MS: '20000', SHUTDOWN_TIMEOUT_MS: '300', REDIS_URL: undefined },
      port,
    );
    try {
      await service.waitFor(/listening on/);
      const call = fetch(`${service.baseUrl}/api/v1/filter`, {
        method: 'POST',
        headers: { Authorization: account.auth.Authorization, 'Content-Type': 'application/json' },
        body: JSON.stringify({ phone: '+447400555200' }),
      }).then(
        (res) => res.status,
        () => 'connection closed',
      );
      expect(await until(async () => (await ledgerState(t.db, account.id)).unsettledCharges === 1, 10_000)).toBe(true);
      const started = Date.now();
      service.child.kill('SIGTERM');
      expect(await call).toBe('connection closed');
      expect(await service.exited).toBe(0);
      expect(Date.now() - started).toBeLessThan(UPSTREAM_LATENCY_MS);
      expect(service.output()).toMatch(/1 request\(s\) still running after \d+ ms were cut off/);
    } finally {
      await service.stop('SIGKILL');
    }
    // The cut call's charge is either refunded by its handler (the upstream call fails as the app closes,
    // if the database is still open) or left unsettled for the sweep at the next start: never lost.
    const state = await ledgerState(t.db, account.id);
    expect(state.balance).toBe(state.ledgerSum);
    expect(state.unsettledCharges + (state.byType.REFUND ?? 0)).toBe(1);
  });
});

describe('shutdown when what the service depends on is gone', () => {
  const SHUTDOWN_TIMEOUT_MS = 3000;
  let pg: OwnPostgres;
  let redis: OwnRedis;
  beforeAll(async () => {
    [pg, redis] = await Promise.all([startOwnPostgres(), startOwnRedis()]);
  }, 60_000);
  afterAll(async () => {
    await redis?.stop();
    await pg?.close();
  });

  it('ends within SHUTDOWN_TIMEOUT_MS with the database not answering and Redis dead, says what it gave up on, exits 1', async () => {
    const service = await startServiceProcess(
      { DATABASE_URL: pg.url, REDIS_URL: redis.url, SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), ADMIN_TOKEN },
      await freePort(),
    );
    try {
      await service.waitFor(/listening on/);
      const account = await createAccountOver(service.baseUrl, { plan: 'standard', credits: 100 });
      await fetch(`${service.baseUrl}/api/v1/balance`, { headers: account.auth }).then((res) => expect(res.status).toBe(200));
      pg.freeze(); // connections stay open, nothing answers: the worst case for pools and queues
      await redis.stop();
      const stuck = fetch(`${service.baseUrl}/api/v1/filter`, {
        method: 'POST',
        headers: { ...account.auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({ phone: '+447400123456' }),
      }).then(
        (res) => res.status,
        () => 'connection closed',
      );
      await new Promise((resolve) => setTimeout(resolve, 200));

      service.child.kill('SIGTERM');
      const exit = await Promise.race([service.exited, new Promise((resolve) => setTimeout(() => resolve('still running'), SHUTDOWN_TIMEOUT_MS + 5000))]);

      expect(exit).toBe(1);
      expect(await stuck).toBe('connection closed');
      expect(service.output()).toMatch(/1 request\(s\) still running after \d+ ms were cut off/);
      expect(service.output()).toMatch(/Shutdown: gave up on [^"]+ after 3000 ms/);
      expect(service.output()).toMatch(/Stopped, with the problems above/);
    } finally {
      await service.stop('SIGKILL');
      pg.thaw();
      await redis.start();
    }
  }, 60_000);
});
