import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { startTestApp, TestApp } from './helpers/test-app';
import { hlrLookupsEnv } from './provider-helpers';

/** The breaker's window: long enough that the outage's calls land inside it on a loaded machine. */
const WINDOW_MS = 10_000;

/**
 * What a client sees of the live breaker. Its rules about time (the window in time of issue 24's chaos
 * run, the half-open trial) and "a failing number is not a failing upstream" are proven on the clock
 * in test/medium/provider/breakers.medium-spec.ts.
 */
describe('the live breaker, as a client sees it', () => {
  let simulator: UpstreamSimulator;
  let t: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    simulator = await startUpstreamSimulator();
    t = await startTestApp(
      hlrLookupsEnv(simulator.url, {
        PROVIDER_TIMEOUT_MS: '2000',
        PROVIDER_RETRIES: '0',
        PROVIDER_BREAKER_FAILURE_RATE: '0.5',
        PROVIDER_BREAKER_WINDOW_MS: String(WINDOW_MS),
        PROVIDER_BREAKER_MIN_CALLS: '20',
        // Once open it would stay open for the whole test: a refusal cannot hide behind a quick recovery.
        PROVIDER_BREAKER_HALF_OPEN_MS: '60000',
      }),
    );
    account = await createAccount(t, { credits: 100_000 });
    await request(t.http)
      .patch('/api/v1/settings')
      .set(account.auth)
      .send({ checks: { network_status: true, line_type: false, portability: false } })
      .expect(200);
  });
  afterAll(async () => {
    await t?.close();
    await simulator?.close();
  });

  const filter = (phone: string) => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone });
  /** 'ok', or the status and the error code. */
  const answerOf = (res: request.Response) => (res.status === 200 ? 'ok' : `${res.status} ${res.body.error?.code}`);

  it('upstream failures inside the window open the circuit: the client gets 503 PROVIDER_UNAVAILABLE, and the upstream is no longer asked', async () => {
    simulator.setOptions({ outage: true });
    try {
      // All at once, so that they land inside one window however slow the machine.
      const codes = (await Promise.all(distinctNumbers(25, 95).map((phone) => filter(phone)))).map(answerOf);
      expect(codes).toEqual(Array(25).fill('503 PROVIDER_UNAVAILABLE'));
    } finally {
      simulator.setOptions({ outage: false });
    }
    // The circuit is open now (half-open only after a minute): the healthy upstream is not even asked.
    simulator.resetStats();
    expect((await filter(distinctNumbers(1, 96)[0])).status).toBe(503);
    expect(simulator.stats().requests).toBe(0);
  });
});
