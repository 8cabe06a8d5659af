import request from 'supertest';
import { CreditsRepository } from '../src/credits/credits.repository';
import { BackfillSpentToday1764400000100 } from '../migrations/1764400000100-BackfillSpentToday';
import { createAccount, TestAccount } from './factories/accounts';
import { waitForBulkJob } from './helpers/bulk';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';
import { clearOfUtcMidnight, UTC_DAY_MARGIN_MS } from './helpers/utc-day';

/** The next 00:00 UTC, as the message of SPENDING_LIMIT_REACHED states it. */
function nextUtcMidnight(): string {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
}

async function expectBalance(t: TestApp, account: TestAccount, balance: number): Promise<void> {
  const state = await ledgerState(t.db, account.id);
  expect({ balance: state.balance, ledgerSum: state.ledgerSum }).toEqual({ balance, ledgerSum: balance });
}

async function spentToday(t: TestApp, account: TestAccount): Promise<number> {
  const [row] = await t.db.query(`SELECT CASE WHEN spent_day = (now() AT TIME ZONE 'UTC')::date THEN spent_today ELSE 0 END AS spent FROM accounts WHERE id = $1`, [account.id]);
  return Number(row.spent);
}

describe('the daily spending cap (daily_credit_limit)', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '300', BULK_POLL_INTERVAL_SECONDS: '0.5' })));
  afterAll(() => t.close());
  // Each test charges and reads today's allowance: none may straddle 00:00 UTC.
  beforeEach(() => clearOfUtcMidnight(t.db), UTC_DAY_MARGIN_MS + 10_000);

  const filter = (account: TestAccount, phone: string = TEST_NUMBERS.connected, app = t) =>
    request(app.http).post('/api/v1/filter').set(account.auth).send({ phone });
  const setCap = (account: TestAccount, cap: number | null) =>
    request(t.http).patch('/api/v1/settings').set(account.auth).send({ daily_credit_limit: cap }).expect(200);

  it('answers 402 SPENDING_LIMIT_REACHED for the call that would pass it, naming the limit, what is left and when it resets; charges nothing', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await setCap(account, 10);
    await filter(account).expect(200);
    await filter(account).expect(200);
    const refused = await filter(account);
    expectError(refused, 402, 'SPENDING_LIMIT_REACHED');
    expect(refused.body.error.message).toContain('daily spending limit of 10 credits: 2 left today');
    expect(refused.body.error.message).toContain(`resets at ${nextUtcMidnight()}`);
    expect((await ledgerState(t.db, account.id)).byType).toEqual({ TOPUP: 1, CHARGE: 2 });
    expect(await spentToday(t, account)).toBe(8);
    await expectBalance(t, account, 992);
  });

  it('a call refused by the cap says so even when a refund gives allowance back before the 402 is worded (CI: INSUFFICIENT_CREDITS with 988 credits)', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await setCap(account, 8);
    await filter(account).expect(200);
    await filter(account).expect(200);
    // Between the refused charge and the read that words its 402, a bulk job's failed entry gives 4
    // credits of today's allowance back (as refundPart does, with its refund row: here only the counter).
    const repository = t.app.get(CreditsRepository);
    const spendingState = repository.spendingState.bind(repository);
    const read = jest.spyOn(repository, 'spendingState').mockImplementationOnce(async (accountId) => {
      await t.db.query(`UPDATE accounts SET spent_today = spent_today - 4 WHERE id = $1`, [accountId]);
      return spendingState(accountId);
    });
    try {
      const refused = await filter(account);
      expectError(refused, 402, 'SPENDING_LIMIT_REACHED');
      expect(read).toHaveBeenCalled();
    } finally {
      read.mockRestore();
    }
    await expectBalance(t, account, 992);
  });

  it('lets a cheaper call use what is left, and a cap of null lifts it', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await setCap(account, 9);
    await filter(account).expect(200);
    await filter(account).expect(200);
    expectError(await filter(account), 402, 'SPENDING_LIMIT_REACHED');
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { network_status: false, line_type: true } }).expect(200);
    await filter(account).expect(200); // 1 credit: exactly the limit
    expectError(await filter(account), 402, 'SPENDING_LIMIT_REACHED');
    await setCap(account, null);
    await filter(account).expect(200);
    await expectBalance(t, account, 1000 - 4 - 4 - 1 - 1);
  });

  it('refuses everything with a cap of 0, and says INSUFFICIENT_CREDITS when the cap is not what blocks', async () => {
    const zero = await createAccount(t, { credits: 1000 });
    await setCap(zero, 0);
    expectError(await filter(zero), 402, 'SPENDING_LIMIT_REACHED');
    // Counted in words that agree: "1 credit", not "1 credits".
    const one = await createAccount(t, { credits: 1000 });
    await setCap(one, 1);
    const refused = await filter(one);
    expectError(refused, 402, 'SPENDING_LIMIT_REACHED');
    expect(refused.body.error.message).toContain('This call costs 4 credits and would pass your daily spending limit of 1 credit: 1 left today.');
    const poor = await createAccount(t, { credits: 3 });
    await setCap(poor, 100);
    expectError(await filter(poor), 402, 'INSUFFICIENT_CREDITS');
    await expectBalance(t, zero, 1000);
    await expectBalance(t, poor, 3);
  });

  it('never moves the counted day back: a charge that finds the row already on the next UTC day counts against that day', async () => {
    // What a statement begun before midnight sees when it takes the row lock after one of the next day.
    const account = await createAccount(t, { credits: 1000 });
    await setCap(account, 1000);
    const onTomorrow = (spent: number) =>
      t.db.query(`UPDATE accounts SET spent_day = (now() AT TIME ZONE 'UTC')::date + 1, spent_today = $2 WHERE id = $1`, [account.id, spent]);
    const counted = async () =>
      (await t.db.query(`SELECT spent_day - (now() AT TIME ZONE 'UTC')::date AS ahead, spent_today FROM accounts WHERE id = $1`, [account.id]))[0];
    await onTomorrow(1000);
    expectError(await filter(account), 402, 'SPENDING_LIMIT_REACHED');
    expect(await counted()).toEqual({ ahead: 1, spent_today: '1000' });
    await onTomorrow(10);
    await filter(account).expect(200);
    const cost = 1000 - (await ledgerState(t.db, account.id)).balance;
    expect(await counted()).toEqual({ ahead: 1, spent_today: String(10 + cost) });
    await expectBalance(t, account, 1000 - cost);
  });

  it('gives the allowance back when a call is refunded', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await setCap(account, 8);
    for (let i = 0; i < 3; i++) expectError(await filter(account, TEST_NUMBERS.failing), 503, 'PROVIDER_UNAVAILABLE');
    expect(await spentToday(t, account)).toBe(0);
    await filter(account).expect(200);
    await filter(account).expect(200);
    expectError(await filter(account), 402, 'SPENDING_LIMIT_REACHED');
    await expectBalance(t, account, 992);
  });

  it('applies to bulk jobs: a reservation past it is 402 and nothing is created; refunds of failed entries give allowance back', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await setCap(account, 12);
    const submit = (phones: string[]) => request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones });
    const tooMuch = await submit([TEST_NUMBERS.connected, TEST_NUMBERS.absent, TEST_NUMBERS.ported, TEST_NUMBERS.undetermined]);
    expectError(tooMuch, 402, 'SPENDING_LIMIT_REACHED');
    expect(tooMuch.body.error.message).toContain('This job costs 16 credits and would pass your daily spending limit of 12 credits: 12 left today');
    expect((await request(t.http).get('/api/v1/filter/bulk').set(account.auth).expect(200)).body.jobs).toEqual([]);

    const quote = await request(t.http).post('/api/v1/filter/bulk/quote').set(account.auth).send({ phones: [TEST_NUMBERS.connected, TEST_NUMBERS.absent, TEST_NUMBERS.ported, TEST_NUMBERS.undetermined] }).expect(200);
    expect(quote.body).toEqual({ total: 4, billable: 4, invalid: 0, cost: 16, balance: 1000, sufficient: false });

    const { body } = await submit([TEST_NUMBERS.connected, TEST_NUMBERS.failing, TEST_NUMBERS.absent]).expect(202);
    expectError(await filter(account), 402, 'SPENDING_LIMIT_REACHED');
    const job = await waitForBulkJob(t.http, account.auth, body.id);
    expect(job).toMatchObject({ charged: 12, refunded: 4 });
    expect(await spentToday(t, account)).toBe(8);
    await filter(account).expect(200);
    expectError(await filter(account), 402, 'SPENDING_LIMIT_REACHED');
    await expectBalance(t, account, 1000 - 8 - 4);
  });

  it('quotes a job that costs nothing (every entry invalid) past a lowered cap, and refuses it as having nothing billable, not as over the cap', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await filter(account).expect(200);
    await setCap(account, 1);
    const body = { phones: ['not a number', '12'] };
    const quote = await request(t.http).post('/api/v1/filter/bulk/quote').set(account.auth).send(body).expect(200);
    expect(quote.body).toMatchObject({ total: 2, billable: 0, invalid: 2, cost: 0, sufficient: true });
    // A job with nothing billable is refused whatever the cap (docs/api.md): the refusal names that, not the limit.
    const refused = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send(body);
    expectError(refused, 400, 'INVALID_REQUEST');
    expect(refused.body.error.message).toMatch(/nothing to look up/);
    await expectBalance(t, account, 1000 - 4);
  });

  it('the backfill migration counts what today\'s ledger charged before the counter existed, less refunds, and never lowers the counter', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await filter(account).expect(200);
    await filter(account).expect(200);
    expectError(await filter(account, TEST_NUMBERS.failing), 503, 'PROVIDER_UNAVAILABLE'); // charged, then refunded
    const charged = 1000 - (await ledgerState(t.db, account.id)).balance;
    const backfill = async () => {
      const runner = t.db.createQueryRunner();
      try {
        await new BackfillSpentToday1764400000100().up(runner);
      } finally {
        await runner.release();
      }
    };
    await t.db.query(`UPDATE accounts SET spent_today = 0, spent_day = NULL WHERE id = $1`, [account.id]);
    await backfill();
    expect(await spentToday(t, account)).toBe(charged);
    await t.db.query(`UPDATE accounts SET spent_today = $2 WHERE id = $1`, [account.id, charged + 5]);
    await backfill();
    expect(await spentToday(t, account)).toBe(charged + 5);
  });

  it('is set by an admin too, and enforced at once', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await t.admin.updateAccountControls(account.id, { daily_credit_limit: 4 }, 'test');
    await filter(account).expect(200);
    expectError(await filter(account), 402, 'SPENDING_LIMIT_REACHED');
    await expectBalance(t, account, 996);
  });

  it('holds under 100 concurrent calls across two instances on one database: never passed by one credit', async () => {
    const other = await startTestApp({ PROVIDER: 'sandbox' });
    try {
      // Both instances warm (pool connections, prepared charge statement), so neither starts late.
      const warm = await createAccount(t, { credits: 10 });
      await filter(warm, TEST_NUMBERS.connected, t).expect(200);
      await filter(warm, TEST_NUMBERS.connected, other).expect(200);
      // One instance's charges go out in batches, so one batch may take all 25 places before the other
      // instance's first statement: the rules are checked on every race, and the race is run again
      // (up to 5 times, a new account each) until both instances have had calls served.
      let bothServed = false;
      for (let race = 1; race <= 5 && !bothServed; race++) {
        const account = await createAccount(t, { credits: 10_000 });
        await setCap(account, 102); // room for 25 calls of 4; a 26th would pass it by 2
        const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => filter(account, TEST_NUMBERS.connected, i % 2 ? other : t)));
        const statuses = answers.map((res) => res.status);
        expect(statuses.filter((status) => status === 200)).toHaveLength(25);
        expect(statuses.filter((status) => status === 402)).toHaveLength(75);
        for (const res of answers.filter((answer) => answer.status === 402)) expect(res.body.error.code).toBe('SPENDING_LIMIT_REACHED');
        expect(await spentToday(t, account)).toBe(100);
        const state = await ledgerState(t.db, account.id);
        expect(state.byType).toEqual({ TOPUP: 1, CHARGE: 25 });
        await expectBalance(t, account, 10_000 - 100);
        bothServed = [1, 0].every((side) => answers.some((res, i) => res.status === 200 && i % 2 === side));
      }
      expect(bothServed).toBe(true);
    } finally {
      await other.close();
    }
  });
});
