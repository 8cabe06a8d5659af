import { AdminModule } from '../../../src/admin/admin.module';
import { CreditsRepository } from '../../../src/credits/credits.repository';
import { CreditsService } from '../../../src/credits/credits.service';
import { TransactionHost, TypeOrmTx } from '../../../src/database/transactions';
import { FilterModule } from '../../../src/filter/filter.module';
import { SettingsService } from '../../../src/settings/settings.service';
import { createAccount, TestAccount } from '../../factories/accounts';
import { ledgerState } from '../../helpers/ledger';
import { settle } from '../../helpers/manual-clock';
import { TEST_NUMBERS } from '../../helpers/numbers';
import { Medium, startMedium } from '../medium';
import { CallOutcome, codesOf, paidCalls } from '../paid-calls';

const DAY_MS = 24 * 3600_000;

/** The next 00:00 UTC after `now`, as the message of SPENDING_LIMIT_REACHED states it. */
const nextUtcMidnight = (now: number) => Math.floor(now / DAY_MS) * DAY_MS + DAY_MS;

/**
 * The daily spending cap (daily_credit_limit), enforced by the charge statements on the UTC day of the
 * Clock (moved from test/spending-cap.e2e-spec.ts: the arithmetic through the services, the day moved
 * by the clock, so no case waits for the machine to be clear of midnight; the HTTP contract of the
 * 402 and the bulk routes stays there).
 */
describe('the daily spending cap (daily_credit_limit)', () => {
  let m: Medium;
  let call: ReturnType<typeof paidCalls>;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, FilterModule] });
    call = paidCalls(m);
  });
  afterAll(() => m.close());

  const setCap = (account: TestAccount, cap: number | null) => m.get(SettingsService).update(account.id, { daily_credit_limit: cap });
  const setChecks = (account: TestAccount, checks: Record<string, boolean>) => m.get(SettingsService).update(account.id, { checks });

  /** What the account has been charged on the clock's UTC day. */
  async function spentToday(account: TestAccount, instance: Medium = m): Promise<number> {
    const [row] = await instance.db.query(
      `SELECT CASE WHEN spent_day = ($2::timestamptz AT TIME ZONE 'UTC')::date THEN spent_today ELSE 0 END AS spent FROM accounts WHERE id = $1`,
      [account.id, instance.clock.date()],
    );
    return Number(row.spent);
  }

  async function expectBalance(account: TestAccount, balance: number): Promise<void> {
    const state = await ledgerState(m.db, account.id, { waitForSettlement: false });
    expect({ balance: state.balance, ledgerSum: state.ledgerSum }).toEqual({ balance, ledgerSum: balance });
  }

  const refusedByCap = (outcome: CallOutcome) => expect(outcome).toMatchObject({ ok: false, code: 'SPENDING_LIMIT_REACHED' });

  it('refuses the call that would pass it (SPENDING_LIMIT_REACHED), naming the limit, what is left and when it resets by the clock; charges nothing', async () => {
    const account = await createAccount(m, { credits: 1000 });
    await setCap(account, 10);
    expect(codesOf([await call(account), await call(account)])).toEqual(['OK', 'OK']);
    const refused = await call(account);
    refusedByCap(refused);
    expect(refused.ok || refused.message).toContain('daily spending limit of 10 credits: 2 left today');
    expect(refused.ok || refused.message).toContain(`resets at ${new Date(nextUtcMidnight(m.clock.now())).toISOString()}`);
    expect((await ledgerState(m.db, account.id, { waitForSettlement: false })).byType).toEqual({ TOPUP: 1, CHARGE: 2 });
    expect(await spentToday(account)).toBe(8);
    await expectBalance(account, 992);
  });

  it('a call refused by the cap says so even when a refund gives allowance back before the refusal is worded (CI: INSUFFICIENT_CREDITS with 988 credits)', async () => {
    const account = await createAccount(m, { credits: 1000 });
    await setCap(account, 8);
    expect(codesOf([await call(account), await call(account)])).toEqual(['OK', 'OK']);
    // Between the refused charge and the read that words its refusal, a bulk job's failed entry gives 4
    // credits of today's allowance back (as refundPart does, with its refund row: here only the counter).
    const repository = m.get(CreditsRepository);
    const spendingState = repository.spendingState.bind(repository);
    const read = jest.spyOn(repository, 'spendingState').mockImplementationOnce(async (accountId) => {
      await m.db.query(`UPDATE accounts SET spent_today = spent_today - 4 WHERE id = $1`, [accountId]);
      return spendingState(accountId);
    });
    try {
      refusedByCap(await call(account));
      expect(read).toHaveBeenCalled();
    } finally {
      read.mockRestore();
    }
    await expectBalance(account, 992);
  });

  it('lets a cheaper call use what is left, and a cap of null lifts it', async () => {
    const account = await createAccount(m, { credits: 1000 });
    await setCap(account, 9);
    expect(codesOf([await call(account), await call(account), await call(account)])).toEqual(['OK', 'OK', 'SPENDING_LIMIT_REACHED']);
    await setChecks(account, { network_status: false, line_type: true });
    expect(await call(account)).toMatchObject({ ok: true }); // 1 credit: exactly the limit
    refusedByCap(await call(account));
    await setCap(account, null);
    expect(await call(account)).toMatchObject({ ok: true });
    await expectBalance(account, 1000 - 4 - 4 - 1 - 1);
  });

  it('refuses everything with a cap of 0, and says INSUFFICIENT_CREDITS when the cap is not what blocks', async () => {
    const zero = await createAccount(m, { credits: 1000 });
    await setCap(zero, 0);
    refusedByCap(await call(zero));
    // Counted in words that agree: "1 credit", not "1 credits".
    const one = await createAccount(m, { credits: 1000 });
    await setCap(one, 1);
    const refused = await call(one);
    refusedByCap(refused);
    expect(refused.ok || refused.message).toContain('This call costs 4 credits and would pass your daily spending limit of 1 credit: 1 left today.');
    const poor = await createAccount(m, { credits: 3 });
    await setCap(poor, 100);
    expect(await call(poor)).toMatchObject({ ok: false, code: 'INSUFFICIENT_CREDITS' });
    await expectBalance(zero, 1000);
    await expectBalance(poor, 3);
  });

  it('never moves the counted day back: a charge that finds the row already on the next UTC day counts against that day', async () => {
    // What a statement whose time was read before midnight sees when it takes the row lock after one of the next day.
    const account = await createAccount(m, { credits: 1000 });
    await setCap(account, 1000);
    const onTomorrow = (spent: number) =>
      m.db.query(`UPDATE accounts SET spent_day = ($3::timestamptz AT TIME ZONE 'UTC')::date + 1, spent_today = $2 WHERE id = $1`, [account.id, spent, m.clock.date()]);
    const counted = async () =>
      (await m.db.query(`SELECT spent_day - ($2::timestamptz AT TIME ZONE 'UTC')::date AS ahead, spent_today FROM accounts WHERE id = $1`, [account.id, m.clock.date()]))[0];
    await onTomorrow(1000);
    refusedByCap(await call(account));
    expect(await counted()).toEqual({ ahead: 1, spent_today: '1000' });
    await onTomorrow(10);
    expect(await call(account)).toMatchObject({ ok: true });
    const cost = 1000 - (await ledgerState(m.db, account.id, { waitForSettlement: false })).balance;
    expect(await counted()).toEqual({ ahead: 1, spent_today: String(10 + cost) });
    await expectBalance(account, 1000 - cost);
  });

  it('gives the allowance back when a call is refunded', async () => {
    const account = await createAccount(m, { credits: 1000 });
    await setCap(account, 8);
    for (let i = 0; i < 3; i++) expect(await call(account, TEST_NUMBERS.failing)).toMatchObject({ ok: false, code: 'PROVIDER_UNAVAILABLE' });
    expect(await spentToday(account)).toBe(0);
    expect(codesOf([await call(account), await call(account), await call(account)])).toEqual(['OK', 'OK', 'SPENDING_LIMIT_REACHED']);
    await expectBalance(account, 992);
  });

  it("applies to bulk reservations: one past it is refused naming the job, and a reservation's refunds give allowance back", async () => {
    const account = await createAccount(m, { credits: 1000 });
    await setCap(account, 12);
    const credits = m.get(CreditsService);
    const txHost = m.get<TransactionHost<TypeOrmTx>>(TransactionHost);
    const reserve = (amount: number, n: number) =>
      txHost.withTransaction(() => credits.reserve(account.id, amount, { reference: `job:${account.id}:${n}`, source: null, reason: 'bulk job' }));
    await expect(reserve(16, 1)).rejects.toMatchObject({
      code: 'SPENDING_LIMIT_REACHED',
      message: expect.stringContaining('This job costs 16 credits and would pass your daily spending limit of 12 credits: 12 left today'),
    });
    expect(await spentToday(account)).toBe(0);
    const reservation = await reserve(12, 2);
    refusedByCap(await call(account));
    // One entry of three failed: its part of the reservation is refunded, with its allowance.
    expect(await txHost.withTransaction(() => credits.refundPart(reservation.id, 4, { reference: `refund:${reservation.id}`, reason: 'entry failed' }))).toBe(true);
    expect(await spentToday(account)).toBe(8);
    expect(codesOf([await call(account), await call(account)])).toEqual(['OK', 'SPENDING_LIMIT_REACHED']);
    await expectBalance(account, 1000 - 8 - 4);
  });

  it('is set by an admin too, and enforced at once', async () => {
    const account = await createAccount(m, { credits: 1000 });
    await m.admin.updateAccountControls(account.id, { daily_credit_limit: 4 }, 'test');
    expect(codesOf([await call(account), await call(account)])).toEqual(['OK', 'SPENDING_LIMIT_REACHED']);
    await expectBalance(account, 996);
  });

  it('holds under 100 concurrent calls across two instances on one database: never passed by one credit', async () => {
    const other = await startMedium({ imports: [AdminModule, FilterModule], joining: m });
    try {
      const callOther = paidCalls(other);
      // Both instances warm (pool connections, prepared charge statement), so neither starts late.
      const warm = await createAccount(m, { credits: 10 });
      expect(codesOf([await call(warm), await callOther(warm)])).toEqual(['OK', 'OK']);
      // One instance's charges go out in batches, so one batch may take all 25 places before the other
      // instance's first statement: the rules are checked on every race, and the race is run again
      // (up to 5 times, a new account each) until both instances have had calls served.
      let bothServed = false;
      for (let race = 1; race <= 5 && !bothServed; race++) {
        const account = await createAccount(m, { credits: 10_000 });
        await setCap(account, 102); // room for 25 calls of 4; a 26th would pass it by 2
        // Each instance has the account's checks at hand, as it would after its first call.
        await Promise.all([m, other].map((instance) => instance.get(SettingsService).checksFor(account.id)));
        // Sent a pair at a time, a turn of the event loop apart, as requests arrive: all in one turn, each
        // instance would send one statement of 50, and whichever locked the row first took all 25 places.
        const pending: Array<Promise<CallOutcome>> = [];
        for (let i = 0; i < 100; i++) {
          pending.push((i % 2 ? callOther : call)(account));
          if (i % 2) await settle();
        }
        const outcomes = await Promise.all(pending);
        const codes = codesOf(outcomes);
        expect(codes.filter((code) => code === 'OK')).toHaveLength(25);
        expect(codes.filter((code) => code === 'SPENDING_LIMIT_REACHED')).toHaveLength(75);
        expect(await spentToday(account)).toBe(100);
        expect((await ledgerState(m.db, account.id, { waitForSettlement: false })).byType).toEqual({ TOPUP: 1, CHARGE: 25 });
        await expectBalance(account, 10_000 - 100);
        bothServed = [1, 0].every((side) => outcomes.some((outcome, i) => outcome.ok && i % 2 === side));
      }
      expect(bothServed).toBe(true);
    } finally {
      await other.close();
    }
  });

  // Last: it moves this file's clock to the next day.
  it('starts a new allowance at 00:00 UTC by the clock: the day of a charge, of its refund and of the refusal message all follow it', async () => {
    const account = await createAccount(m, { credits: 1000 });
    await setCap(account, 8);
    // Half a minute before the next midnight by the clock (whatever the machine's time).
    const midnight = nextUtcMidnight(m.clock.now() + 60_000);
    await m.clock.advance(midnight - 30_000 - m.clock.now());
    expect(codesOf([await call(account), await call(account, TEST_NUMBERS.ported)])).toEqual(['OK', 'OK']);
    const late = await call(account);
    refusedByCap(late);
    expect(late.ok || late.message).toContain(`resets at ${new Date(midnight).toISOString()}`);
    const [yesterdays] = await m.db.query(`SELECT id FROM ledger_entries WHERE account_id = $1 AND type = 'CHARGE' ORDER BY id LIMIT 1`, [account.id]);

    await m.clock.advance(60_000); // 00:00:30 of the next day, by the clock only
    expect(await spentToday(account)).toBe(0);
    expect(await call(account)).toMatchObject({ ok: true }); // the old code counted it on the database's day: refused
    expect(await spentToday(account)).toBe(4);
    const [{ spent_day: day }] = await m.db.query(`SELECT to_char(spent_day, 'YYYY-MM-DD') AS spent_day FROM accounts WHERE id = $1`, [account.id]);
    expect(day).toBe(new Date(midnight).toISOString().slice(0, 10));
    // A refund of yesterday's charge gives nothing back today: today's allowance is today's.
    await m.db.query(`UPDATE ledger_entries SET settled_at = NULL WHERE id = $1`, [yesterdays.id]);
    expect(await m.get(CreditsService).refund(yesterdays.id, 'test: a late refund')).toBe(true);
    expect(await spentToday(account)).toBe(4);
    expect(codesOf([await call(account), await call(account)])).toEqual(['OK', 'SPENDING_LIMIT_REACHED']);
    const refused = await call(account);
    expect(refused.ok || refused.message).toContain(`resets at ${new Date(midnight + DAY_MS).toISOString()}`);
    await expectBalance(account, 1000 - 4 * 4 + 4);
  });
});
