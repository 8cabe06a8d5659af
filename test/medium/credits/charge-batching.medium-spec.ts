import { AdminModule } from '../../../src/admin/admin.module';
import { AppError } from '../../../src/common/errors';
import { ChargeBatcher, CHARGE_STATEMENT_TIMEOUT_MS, LANDING_MARGIN_MS, LANDING_POLL_MS } from '../../../src/credits/charge-batcher';
import { CreditsRepository } from '../../../src/credits/credits.repository';
import { CreditsService } from '../../../src/credits/credits.service';
import { PendingGiveBacks } from '../../../src/credits/pending-give-backs';
import { FilterModule } from '../../../src/filter/filter.module';
import { createAccount } from '../../factories/accounts';
import { advanceWhilePaused } from '../../helpers/clock-pauses';
import { eventually } from '../../helpers/eventually';
import { ledgerState } from '../../helpers/ledger';
import { Medium, startMedium } from '../medium';
import { codesOf, paidCalls } from '../paid-calls';

/**
 * The charges of one account are written together (ChargeBatcher → CreditsRepository.chargeMany):
 * these tests hold the batches to the rules of one-by-one charges, through /filter's service on a
 * real PostgreSQL (moved from test/charge-batching.e2e-spec.ts: the same calls, without HTTP).
 */
describe('charging the concurrent calls of one account together', () => {
  let m: Medium;
  let call: ReturnType<typeof paidCalls>;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, FilterModule] });
    call = paidCalls(m);
  });
  afterAll(() => m.close());

  it('writes a burst in fewer statements than calls, each call its own row, balance_after a gapless chain', async () => {
    const account = await createAccount(m, { credits: 4 * 60 });
    const chargeMany = jest.spyOn(m.get(CreditsRepository), 'chargeMany');
    try {
      const outcomes = await Promise.all(Array.from({ length: 60 }, () => call(account)));
      expect(codesOf(outcomes)).toEqual(Array(60).fill('OK'));
      const statements = chargeMany.mock.calls.filter(([accountId]) => accountId === account.id);
      expect(statements.length).toBeLessThan(60);
      expect(statements.reduce((calls, [, , batch]) => calls + batch.length, 0)).toBe(60);
    } finally {
      chargeMany.mockRestore();
    }
    const rows: Array<{ type: string; amount: string; balance_after: string; reference: string }> = await m.db.query(
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
    const account = await createAccount(m, { credits: 10 });
    const credits = m.get(CreditsService);
    const charge = (cost: number, n: number) => credits.charge(account.id, cost, { reference: `test:${account.id}:${n}`, phone: null, source: 'test' });
    // Queued in one tick: 7, 1, 1, 7, 1. The first 7 leaves 3; the second 7 is refused; the 1s fit.
    const outcomes = await Promise.allSettled([charge(7, 1), charge(1, 2), charge(1, 3), charge(7, 4), charge(1, 5)]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    const refused = (outcomes[3] as PromiseRejectedResult).reason as AppError;
    expect(refused.code).toBe('INSUFFICIENT_CREDITS');
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 0, ledgerSum: 0, byType: { TOPUP: 1, CHARGE: 4 } });
  });

  it('two instances charging one account at once: exactly as many calls as the credits cover', async () => {
    const other = await startMedium({ imports: [AdminModule, FilterModule], joining: m });
    try {
      const callOther = paidCalls(other);
      const account = await createAccount(m, { credits: 4 * 25 });
      const outcomes = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 === 0 ? call : callOther)(account)));
      const codes = codesOf(outcomes);
      expect(codes.filter((code) => code === 'OK')).toHaveLength(25);
      expect(codes.filter((code) => code === 'INSUFFICIENT_CREDITS')).toHaveLength(75);
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 0, ledgerSum: 0, byType: { TOPUP: 1, CHARGE: 25 }, unsettledCharges: 0 });
    } finally {
      await other.close();
    }
  });

  it('a statement the database refuses fails only its own calls (503, nothing taken); the next ones go through', async () => {
    const account = await createAccount(m, { credits: 40 });
    const chargeMany = jest.spyOn(m.get(CreditsRepository), 'chargeMany').mockRejectedValueOnce(Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }));
    try {
      const failed = await call(account);
      expect(failed).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE' });
      const answered = await Promise.all(Array.from({ length: 5 }, () => call(account)));
      expect(codesOf(answered)).toEqual(Array(5).fill('OK'));
    } finally {
      chargeMany.mockRestore();
    }
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 20, ledgerSum: 20, byType: { TOPUP: 1, CHARGE: 5 }, unsettledCharges: 0 });
  });

  describe('while another transaction holds the account row', () => {
    /** Resolves once a charge statement waits for a row lock in this database. */
    const chargeWaitsForLock = async () => {
      const waiting = await eventually(
        async () =>
          (await m.db.query(
            `SELECT count(*)::int AS waiting FROM pg_stat_activity
              WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH account AS%'`,
          ))[0].waiting as number,
        (count) => count > 0,
        10_000,
        20,
      );
      expect(waiting).toBeGreaterThan(0);
    };

    it('charges from the balance the lock gives, even when it went up meanwhile (a refund, a top-up)', async () => {
      const account = await createAccount(m, { credits: 1 });
      const other = m.db.createQueryRunner();
      await other.connect();
      try {
        await other.startTransaction();
        await other.query(`UPDATE accounts SET balance = balance + 10 WHERE id = $1`, [account.id]);
        await other.query(
          `INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, settled_at) VALUES ($1, 'TOPUP', 10, 11, $2, now())`,
          [account.id, `test:topup:${account.id}`],
        );
        const charged = call(account); // costs 4: a balance of 1 does not cover it, 11 does
        await chargeWaitsForLock();
        await other.commitTransaction();
        expect(await charged).toMatchObject({ ok: true });
      } finally {
        await other.release();
      }
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 7, ledgerSum: 7, byType: { TOPUP: 2, CHARGE: 1 }, unsettledCharges: 0 });
    });

    it('answers 503 when the charge does not get the row in time; the statement never lands later, the next call served', async () => {
      const account = await createAccount(m, { credits: 40 });
      expect(await call(account)).toMatchObject({ ok: true }); // the number's answer is cached now: its next charge is written settled
      const batcher = m.get(ChargeBatcher);
      const other = m.db.createQueryRunner();
      await other.connect();
      // The statement's own deadline (PostgreSQL's lock_timeout), shortened: it is real time, not the Clock's.
      batcher.timeoutMs = 500;
      const chargeMany = jest.spyOn(m.get(CreditsRepository), 'chargeMany');
      try {
        await other.startTransaction();
        await other.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [account.id]);
        expect(await call(account)).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE' });
        await other.rollbackTransaction();
        // The statement that timed out gave up the lock's wait at its own deadline: it charged nothing.
        expect(await chargeMany.mock.results[0].value).toMatchObject({ late: true });
      } finally {
        chargeMany.mockRestore();
        batcher.timeoutMs = CHARGE_STATEMENT_TIMEOUT_MS;
        await other.release();
      }
      // Its settled charge is looked for until the landing margin has passed by the clock: none lands.
      const giveBacks = m.get(PendingGiveBacks);
      expect(await advanceWhilePaused(m.clock, () => giveBacks.count === 0, { stepMs: LANDING_POLL_MS })).toBeGreaterThanOrEqual(LANDING_MARGIN_MS);
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 36, ledgerSum: 36, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
      expect(await call(account)).toMatchObject({ ok: true });
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 32, ledgerSum: 32, byType: { TOPUP: 1, CHARGE: 2 }, unsettledCharges: 0 });
    });
  });
});
