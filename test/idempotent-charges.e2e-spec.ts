import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { freePort, startServiceProcess } from './helpers/service-process';
import { startTestApp, TestApp } from './helpers/test-app';

/** The shortest sweep bound the configuration accepts for a 300 ms timeout without retries. */
const SWEEP_BOUND_SECONDS = 6;
const ENV = { PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '300', PROVIDER_RETRIES: '0', UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: String(SWEEP_BOUND_SECONDS) };

/**
 * The process-level proof of "charged at most once per Idempotency-Key": an instance killed with its
 * call in flight. The ledger rules themselves (lost answers, races between instances, take-overs, a
 * key's 24 h) are proven without HTTP in test/medium/idempotency/idempotent-charges.medium-spec.ts.
 */
describe('an Idempotency-Key is charged at most once, enforced by the ledger', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp(ENV)));
  afterAll(() => t.close());

  const filter = (app: TestApp, account: TestAccount, key: string, phone: string = TEST_NUMBERS.connected) =>
    request(app.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', key).send({ phone });

  it('after a kill -9 mid-call, a retry gets 409 until the sweep refunds the charge, then runs again', async () => {
    const account = await createAccount(t, { credits: 100 });
    const port = await freePort();
    const dying = await startServiceProcess({ PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '4000', PROVIDER_RETRIES: '0', UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: '60' }, port);
    try {
      // A loaded machine takes its time to compile and start a child: a generous deadline, not a bound.
      await dying.waitFor(/listening on/, 120_000);
      const inFlight = request(dying.baseUrl).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', 'killed-1').send({ phone: TEST_NUMBERS.slow }).catch(() => 'connection lost');
      await eventually(() => ledgerState(t.db, account.id, { waitForSettlement: false }), (state) => state.unsettledCharges === 1, 30_000);
      await dying.stop('SIGKILL');
      expect(await inFlight).toBe('connection lost');
    } finally {
      await dying.stop('SIGKILL');
    }
    expectError(await filter(t, account, 'killed-1', TEST_NUMBERS.slow), 409, 'IDEMPOTENCY_CONFLICT');
    // This suite's instance sweeps charges older than 6 s: the dead call's charge is refunded, and the key freed with it.
    const refunded = await eventually(() => ledgerState(t.db, account.id, { waitForSettlement: false }), (state) => state.byType.REFUND === 1, 60_000);
    expect(refunded).toMatchObject({ balance: 100, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
    // The retry runs again (charged, and refunded as the slow number times out here too).
    expectError(await filter(t, account, 'killed-1', TEST_NUMBERS.slow), 503, 'PROVIDER_UNAVAILABLE');
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 100, ledgerSum: 100, byType: { TOPUP: 1, CHARGE: 2, REFUND: 2 }, unsettledCharges: 0 });
  }, 240_000);
});
