import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { freePort, PROCESS_TEST_TIMEOUT_MS, START_DEADLINE_MS, startServiceProcess } from './helpers/service-process';
import { startTestApp, TestApp } from './helpers/test-app';


describe('a crash between charge and answer loses no credit', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('kill -9 with calls in flight: after restart, only the answered calls stay charged', async () => {
    const account: TestAccount = await createAccount(t, { credits: 1000 });
    // The slow test number waits out its 10 s timeout, far longer than the kill takes once its charges
    // are seen, however busy the machine; unanswered charges are swept after 15 s, the shortest bound the
    // configuration accepts for that timeout.
    const env = { PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '10000', PROVIDER_RETRIES: '0', UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: '15' };
    const port = await freePort();
    const first = await startServiceProcess(env, port);
    try {
      await first.listening();
      for (let i = 0; i < 3; i++) {
        await request(first.baseUrl).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }).expect(200);
      }
      const inFlight = Array.from({ length: 10 }, () =>
        request(first.baseUrl)
          .post('/api/v1/filter')
          .set(account.auth)
          .send({ phone: TEST_NUMBERS.slow })
          .then(
            (res) => res.status,
            () => 'connection lost',
          ),
      );
      const charged = await eventually(() => ledgerState(t.db, account.id, { waitForSettlement: false }), (state) => state.unsettledCharges === 10, START_DEADLINE_MS, 25);
      expect(charged).toMatchObject({ balance: 1000 - 13 * 4, unsettledCharges: 10 });

      await first.stop('SIGKILL');
      expect(await Promise.all(inFlight)).toEqual(Array(10).fill('connection lost'));
    } finally {
      await first.stop('SIGKILL');
    }

    const second = await startServiceProcess(env, port);
    try {
      await second.listening();
      const recovered = await eventually(() => ledgerState(t.db, account.id, { waitForSettlement: false }), (state) => state.unsettledCharges === 0, START_DEADLINE_MS);
      expect(recovered).toEqual({
        balance: 1000 - 3 * 4,
        ledgerSum: 1000 - 3 * 4,
        byType: { TOPUP: 1, CHARGE: 13, REFUND: 10 },
        unsettledCharges: 0,
      });
    } finally {
      await second.stop();
    }
  }, PROCESS_TEST_TIMEOUT_MS);
});
