import request from 'supertest';
import { AppError } from '../src/common/errors';
import { ChargeBatcher } from '../src/credits/charge-batcher';
import { CreditsRepository } from '../src/credits/credits.repository';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount, TestAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
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

  describe('while another transaction holds the account row', () => {
    /** Resolves once a charge statement waits for a row lock in this database. */
    const chargeWaitsForLock = async () => {
      const waiting = await eventually(
        async () =>
          (await t.db.query(
            `SELECT count(*)::int AS waiting FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH account AS%'`,
          ))[0].waiting as number,
        (count) => count > 0,
        5000,
      );
      expect(waiting).toBeGreaterThan(0);
    };

    it('charges from the balance the lock gives, even when it went up meanwhile (a refund, a top-up)', async () => {
      const account = await createAccount(t, { credits: 1 });
      const other = t.db.createQueryRunner();
      await other.connect();
      try {
        await other.startTransaction();
        await other.query(`UPDATE accounts SET balance = balance + 10 WHERE id = $1`, [account.id]);
        await other.query(
          `INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, settled_at) VALUES ($1, 'TOPUP', 10, 11, $2, now())`,
          [account.id, `test:topup:${account.id}`],
        );
        const call = filter(t, account).then((res) => res); // costs 4: a balance of 1 does not cover it, 11 does
        await chargeWaitsForLock();
        await other.commitTransaction();
        const res = await call;
        expect(res.status).toBe(200);
      } finally {
        await other.release();
      }
      expect(await ledgerState(t.db, account.id)).toEqual({ balance: 7, ledgerSum: 7, byType: { TOPUP: 2, CHARGE: 1 }, unsettledCharges: 0 });
    });

    it('answers 503 when the charge does not get the row in time; the late charge is given back, the next call served', async () => {
      const account = await createAccount(t, { credits: 40 });
      await filter(t, account).expect(200); // the number's answer is cached now: its next charge is written settled
      const batcher = t.app.get(ChargeBatcher);
      const other = t.db.createQueryRunner();
      await other.connect();
      batcher.timeoutMs = 500;
      try {
        await other.startTransaction();
        await other.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [account.id]);
        const res = await filter(t, account);
        expect(res.status).toBe(503);
        expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
        await other.rollbackTransaction();
      } finally {
        batcher.timeoutMs = 10_000;
        await other.release();
      }
      // The statement that timed out was still waiting in PostgreSQL: it commits once the lock is free,
      // its charge written settled (the answer was known), and the batcher gives it back as it lands.
      const refunded = await eventually(() => ledgerState(t.db, account.id, { waitForSettlement: false }), (state) => state.byType.REFUND === 1, 5000);
      expect(refunded).toEqual({ balance: 36, ledgerSum: 36, byType: { TOPUP: 1, CHARGE: 2, REFUND: 1 }, unsettledCharges: 0 });
      await filter(t, account).expect(200);
      expect(await ledgerState(t.db, account.id)).toEqual({ balance: 32, ledgerSum: 32, byType: { TOPUP: 1, CHARGE: 3, REFUND: 1 }, unsettledCharges: 0 });
    });
  });
});
