import request from 'supertest';
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

/**
 * The daily spending cap over HTTP: the 402 of a call and of a bulk job, the quote, the backfill
 * migration (which reads the database's day). Its arithmetic (refunds, the day turning at midnight by
 * the clock, two instances) is proven in test/medium/credits/spending-cap.medium-spec.ts.
 */
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

    // The job reserves the whole 12 and gives back its failed entry's 4 when it fails: spent today ends at 8. (No call
    // is asked for between the two: the job's worker may already have given the 4 back, as a CI run's loaded pass saw.)
    const { body } = await submit([TEST_NUMBERS.connected, TEST_NUMBERS.failing, TEST_NUMBERS.absent]).expect(202);
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

});
