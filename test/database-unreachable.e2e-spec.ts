import request from 'supertest';
import { DatabaseReachability } from '../src/database/reachability';
import { createAccount, TestAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { expectError } from './helpers/expect-error';
import { TEST_NUMBERS } from './helpers/numbers';
import { proxiedDatabaseUrl, TcpProxy } from './helpers/tcp-proxy';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * The chaos run's finding 5: with PostgreSQL blackholed, every call waited the pool's 5 s connect
 * timeout before its 503. Once a connection fails to open, the pool refuses at once until a probe
 * outside it gets an answer. The app reaches PostgreSQL through a TCP proxy that the test resets and
 * blackholes (connections accepted, nothing ever answered); what the pool tried is counted by the proxy.
 */
describe('PostgreSQL blackholed: 503 at once once the pool knows', () => {
  let proxy: TcpProxy;
  let t: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    const proxied = await proxiedDatabaseUrl(process.env.DATABASE_URL!);
    proxy = proxied.proxy;
    t = await startTestApp({ DATABASE_URL: proxied.url, LOG_LEVEL: 'silent', DATABASE_CONNECT_TIMEOUT_MS: '5000' });
    account = await createAccount(t, { credits: 400 });
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }).expect(200);
  });
  afterAll(async () => {
    proxy.unblackhole();
    await t.close();
    await proxy.cut();
  });

  it('the first call waits for its connect timeout; the next ones get 503 without opening a connection; all answer again once it is back', async () => {
    const reachability = t.app.get(DatabaseReachability);
    // The pool's open connections break, and nothing answers from now on.
    proxy.reset();
    proxy.blackhole();
    const first = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected });
    expectError(first, 503, 'SERVICE_UNAVAILABLE');
    expect(reachability.reachable).toBe(false);

    const opened = proxy.accepted;
    const refusedBefore = reachability.refusedFast;
    for (let call = 0; call < 10; call++) {
      const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected });
      expectError(res, 503, 'SERVICE_UNAVAILABLE');
    }
    // No connection attempt of the pool (each would have waited 5 s); only the probe's, one every second at most.
    expect(reachability.refusedFast - refusedBefore).toBeGreaterThanOrEqual(10);
    expect(proxy.accepted - opened).toBeLessThanOrEqual(3);

    proxy.unblackhole();
    const after = await eventually(
      () => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }),
      (res) => res.status === 200,
      15_000,
      200,
    );
    expect(after.status).toBe(200);
    expect(reachability.reachable).toBe(true);
  });
});
