import request from 'supertest';
import { CreditsRepository } from '../src/credits/credits.repository';
import { CreditsService } from '../src/credits/credits.service';
import { IdempotencyRepository } from '../src/idempotency/idempotency.repository';
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

  it('retries a settle batch the database refused, so the sweep never refunds an answered call', async () => {
    const account = await createAccount(t, { credits: 40 });
    const repository = t.app.get(CreditsRepository);
    const settleMany = jest.spyOn(repository, 'settleMany').mockRejectedValueOnce(new Error('connection reset'));
    try {
      await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }).expect(200);
      const state = await ledgerState(t.db, account.id, { waitForSettlement: true });
      expect(settleMany.mock.calls.length).toBeGreaterThanOrEqual(2);
      expect(state).toEqual({ balance: 36, ledgerSum: 36, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
    } finally {
      settleMany.mockRestore();
    }
  });

  it('never refunds a settled (answered) charge, whoever asks', async () => {
    const account = await createAccount(t, { credits: 40 });
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }).expect(200);
    await t.app.get(CreditsService).flushSettlements();
    const [charge] = await t.db.query(`SELECT id FROM ledger_entries WHERE account_id = $1 AND type = 'CHARGE'`, [account.id]);
    expect(await t.app.get(CreditsService).refund(charge.id, 'late sweep')).toBe(false);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 36, byType: { TOPUP: 1, CHARGE: 1 } });
  });

  it('answers an answered call even when its Idempotency-Key cannot be stored, and a retry is not charged again', async () => {
    const account = await createAccount(t, { credits: 40 });
    const complete = jest.spyOn(t.app.get(IdempotencyRepository), 'complete').mockRejectedValueOnce(new Error('connection reset'));
    try {
      const first = await request(t.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', 'flaky-store').send({ phone: TEST_NUMBERS.connected });
      expect(first.status).toBe(200);
      const retry = await request(t.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', 'flaky-store').send({ phone: TEST_NUMBERS.connected });
      expect(retry.status).toBe(409);
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 36, byType: { TOPUP: 1, CHARGE: 1 } });
    } finally {
      complete.mockRestore();
    }
  });
});
