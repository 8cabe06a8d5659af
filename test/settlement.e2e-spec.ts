import request from 'supertest';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount } from './factories/accounts';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

describe('settling answered charges in batches', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('settles every answered call of a burst, in a few statements', async () => {
    const account = await createAccount(t, { credits: 4 * 60 });
    const responses = await Promise.all(
      Array.from({ length: 60 }, () => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected })),
    );
    expect(responses.map((res) => res.status)).toEqual(Array(60).fill(200));
    await t.app.get(CreditsService).flushSettlements();
    expect(await ledgerState(t.db, account.id, { waitForSettlement: false })).toEqual({
      balance: 0,
      ledgerSum: 0,
      byType: { TOPUP: 1, CHARGE: 60 },
      unsettledCharges: 0,
    });
  });

  it('writes the pending settles when the app shuts down', async () => {
    const app = await startTestApp();
    const account = await createAccount(app, { credits: 40 });
    await Promise.all(Array.from({ length: 10 }, () => request(app.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }).expect(200)));
    await app.close(); // right after the answers: the batch has not been written yet, shutdown writes it
    expect(await ledgerState(t.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 0, unsettledCharges: 0 });
  });
});
