import { CreditsRepository } from '../src/credits/credits.repository';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount, TestAccount } from './factories/accounts';
import { ledgerState } from './helpers/ledger';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * The abandoned-charges sweep (issue 26: it issued one statement per charge, 1,000 in 0.63 s): the
 * charges of calls that never answered are refunded together, exactly once each, by the same rules.
 */
describe('the sweep of charges whose calls never answered', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox' })));
  afterAll(() => t.close());

  /** `count` unsettled charges of `cost` on the account, made an hour ago (a call that died between charge and answer). */
  async function abandonedCharges(account: TestAccount, count: number, cost: number): Promise<string[]> {
    const credits = t.app.get(CreditsService);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const charge = await credits.charge(account.id, cost, { reference: `charge:sweep-${account.id}-${i}`, phone: '+44740012****', source: 'sweep-test' });
      ids.push(charge.id);
    }
    // As if they really were made then: counted on that UTC day, which is yesterday in the first hour
    // after midnight (a CI run at 00:04 UTC saw spent_today 90 when only the ledger was backdated). One
    // statement, so both read the same now().
    await t.db.query(
      `WITH backdated AS (UPDATE ledger_entries SET created_at = now() - interval '1 hour' WHERE id = ANY($1::bigint[]) RETURNING 1)
       UPDATE accounts SET spent_day = ((now() - interval '1 hour') AT TIME ZONE 'UTC')::date WHERE id = $2 AND EXISTS (SELECT 1 FROM backdated)`,
      [ids, account.id],
    );
    return ids;
  }

  it('refunds the abandoned charges of several accounts in one statement, each once, balance = ledger sum', async () => {
    const first = await createAccount(t, { credits: 100 });
    const second = await createAccount(t, { credits: 50 });
    const ids = [...(await abandonedCharges(first, 30, 3)), ...(await abandonedCharges(second, 12, 4))];
    const repository = t.app.get(CreditsRepository);
    const oneByOne = jest.spyOn(repository, 'refund');
    const together = jest.spyOn(repository, 'refundAbandoned');
    try {
      expect(await t.app.get(CreditsService).refundAbandonedCharges(600)).toBeGreaterThanOrEqual(42);
      expect(oneByOne).not.toHaveBeenCalled();
      expect(together.mock.calls.flatMap(([charges]) => charges)).toEqual(expect.arrayContaining(ids));
    } finally {
      oneByOne.mockRestore();
      together.mockRestore();
    }
    expect(await ledgerState(t.db, first.id, { waitForSettlement: false })).toEqual({ balance: 100, ledgerSum: 100, byType: { TOPUP: 1, CHARGE: 30, REFUND: 30 }, unsettledCharges: 0 });
    expect(await ledgerState(t.db, second.id, { waitForSettlement: false })).toEqual({ balance: 50, ledgerSum: 50, byType: { TOPUP: 1, CHARGE: 12, REFUND: 12 }, unsettledCharges: 0 });
    // Each refund row's balance is the balance after it, in charge order; today's allowance given back.
    const refunds: Array<{ balance_after: string }> = await t.db.query(
      `SELECT r.balance_after FROM ledger_entries r WHERE r.account_id = $1 AND r.type = 'REFUND' ORDER BY r.refund_of`,
      [first.id],
    );
    expect(refunds.map((row) => Number(row.balance_after))).toEqual(Array.from({ length: 30 }, (_, i) => 13 + 3 * i));
    const [{ spent_today }]: Array<{ spent_today: string }> = await t.db.query(`SELECT spent_today FROM accounts WHERE id = $1`, [first.id]);
    expect(Number(spent_today)).toBe(0);
    // A second sweep finds nothing to refund.
    expect(await t.app.get(CreditsService).refundAbandonedCharges(600)).toBe(0);
  });

  it('a charge refunded meanwhile is not refunded twice, and the others are', async () => {
    const account = await createAccount(t, { credits: 30 });
    const ids = await abandonedCharges(account, 10, 3);
    // Refunded by another instance's sweep after this one listed it: the statement fails as a whole on refund_of.
    const repository = t.app.get(CreditsRepository);
    const original = repository.refundAbandoned.bind(repository);
    const raced = jest.spyOn(repository, 'refundAbandoned').mockImplementationOnce(async (charges, reason) => {
      await t.db.query(
        `INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, refund_of, reason, settled_at)
         VALUES ($1, 'REFUND', 0, (SELECT balance FROM accounts WHERE id = $1), 'race:' || $2, $2, 'raced', now())`,
        [account.id, ids[4]],
      );
      return original(charges, reason);
    });
    try {
      expect(await t.app.get(CreditsService).refundAbandonedCharges(600)).toBeGreaterThanOrEqual(9);
    } finally {
      raced.mockRestore();
    }
    const rows: Array<{ refund_of: string; refunds: string }> = await t.db.query(
      `SELECT refund_of, count(*) AS refunds FROM ledger_entries WHERE refund_of = ANY($1::bigint[]) GROUP BY refund_of`,
      [ids],
    );
    expect(rows.map((row) => Number(row.refunds))).toEqual(Array(10).fill(1));
  });

  it('when the statement fails, refunds the charges one by one, each once', async () => {
    const account = await createAccount(t, { credits: 30 });
    const ids = await abandonedCharges(account, 10, 3);
    const failing = jest.spyOn(t.app.get(CreditsRepository), 'refundAbandoned').mockRejectedValueOnce(new Error('simulated deadlock'));
    try {
      expect(await t.app.get(CreditsService).refundAbandonedCharges(600)).toBeGreaterThanOrEqual(10);
    } finally {
      failing.mockRestore();
    }
    expect(await ledgerState(t.db, account.id, { waitForSettlement: false })).toEqual({ balance: 30, ledgerSum: 30, byType: { TOPUP: 1, CHARGE: 10, REFUND: 10 }, unsettledCharges: 0 });
    const [{ refunded }]: Array<{ refunded: string }> = await t.db.query(`SELECT count(DISTINCT refund_of) AS refunded FROM ledger_entries WHERE refund_of = ANY($1::bigint[])`, [ids]);
    expect(Number(refunded)).toBe(10);
  });
});
