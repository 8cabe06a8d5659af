import request from 'supertest';
import { AppError } from '../src/common/errors';
import { CreditsRepository } from '../src/credits/credits.repository';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount, TestAccount } from './factories/accounts';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * The charges of one account are written together (ChargeBatcher → CreditsRepository.chargeMany):
 * these tests hold the batches to the rules of one-by-one charges.
 */
describe('charging the concurrent calls of one account together', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  const filter = (app: TestApp, account: TestAccount) =>
    request(app.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected });

  it('writes a burst in fewer statements than calls, each call its own row, balance_after a gapless chain', async () => {
    const account = await createAccount(t, { credits: 4 * 60 });
    const chargeMany = jest.spyOn(t.app.get(CreditsRepository), 'chargeMany');
    try {
      const responses = await Promise.all(Array.from({ length: 60 }, () => filter(t, account)));
      expect(responses.map((res) => res.status)).toEqual(Array(60).fill(200));
      const statements = chargeMany.mock.calls.filter(([accountId]) => accountId === account.id);
      expect(statements.length).toBeLessThan(60);
      expect(statements.reduce((calls, [, , batch]) => calls + batch.length, 0)).toBe(60);
    } finally {
      chargeMany.mockRestore();
    }
    const rows: Array<{ type: string; amount: string; balance_after: string; reference: string }> = await t.db.query(
      `SELECT type, amount, balance_after, reference FROM ledger_entries WHERE account_id = $1 ORDER BY id`,
      [account.id],
    );
    expect(rows).toHaveLength(61);
    expect(new Set(rows.map((row) => row.reference)).size).toBe(61);
    // Every row's balance_after is the previous one plus its amount: no two charges saw the same balance.
    for (let i = 1; i < rows.length; i++) {
      expect(Number(rows[i].balance_after)).toBe(Number(rows[i - 1].balance_after) + Number(rows[i].amount));
    }
    expect(rows.map((row) => Number(row.balance_after))).toEqual(Array.from({ length: 61 }, (_, i) => 240 - 4 * i));
  });

  it('takes calls at different prices in order while the balance covers them, like one by one', async () => {
    const account = await createAccount(t, { credits: 10 });
    const credits = t.app.get(CreditsService);
    const charge = (cost: number, n: number) => credits.charge(account.id, cost, { reference: `test:${account.id}:${n}`, phone: null, source: 'test' });
    // Queued in one tick: 7, 1, 1, 7, 1. The first 7 leaves 3; the second 7 is refused; the 1s fit.
    const outcomes = await Promise.allSettled([charge(7, 1), charge(1, 2), charge(1, 3), charge(7, 4), charge(1, 5)]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const refused = (outcomes[3] as PromiseRejectedResult).reason as AppError;
    expect(refused.code).toBe('INSUFFICIENT_CREDITS');
    expect(await ledgerState(t.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 0, ledgerSum: 0, byType: { TOPUP: 1, CHARGE: 4 } });
  });

  it('two instances charging one account at once: exactly as many calls as the credits cover', async () => {
    const other = await startTestApp();
    try {
      const account = await createAccount(t, { credits: 4 * 25 });
      const responses = await Promise.all(Array.from({ length: 100 }, (_, i) => filter(i % 2 === 0 ? t : other, account)));
      const statuses = responses.map((res) => res.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(25);
      expect(statuses.filter((status) => status === 402)).toHaveLength(75);
      expect(await ledgerState(t.db, account.id)).toEqual({ balance: 0, ledgerSum: 0, byType: { TOPUP: 1, CHARGE: 25 }, unsettledCharges: 0 });
    } finally {
      await other.close();
    }
  });

  it('a statement the database refuses fails only its own calls (503, nothing taken); the next ones go through', async () => {
    const account = await createAccount(t, { credits: 40 });
    const repository = t.app.get(CreditsRepository);
    const chargeMany = jest.spyOn(repository, 'chargeMany').mockRejectedValueOnce(Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }));
    try {
      const failed = await filter(t, account);
      expect(failed.status).toBe(503);
      expect(failed.body.error.code).toBe('SERVICE_UNAVAILABLE');
      const answered = await Promise.all(Array.from({ length: 5 }, () => filter(t, account)));
      expect(answered.map((res) => res.status)).toEqual(Array(5).fill(200));
    } finally {
      chargeMany.mockRestore();
    }
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 20, ledgerSum: 20, byType: { TOPUP: 1, CHARGE: 5 }, unsettledCharges: 0 });
  });
});
