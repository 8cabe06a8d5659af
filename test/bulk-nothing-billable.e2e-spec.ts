import request from 'supertest';
import { createAccount } from './factories/accounts';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * Review finding #7: an account with 0 credits submitted 1,000-entry jobs of invalid numbers (cost 0)
 * without limit, each storing 1,000 rows for good and, with a callback_url, queueing deliveries. A job
 * with nothing billable is refused: 400 INVALID_REQUEST, nothing created.
 */
describe('bulk jobs with nothing billable', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  const invalid = Array.from({ length: 1000 }, (_, i) => `not a number ${i}`);
  const jobsOf = async (accountId: string) => Number((await t.db.query(`SELECT count(*) AS n FROM bulk_jobs WHERE account_id = $1`, [accountId]))[0].n);

  it('refuses a 1,000-entry job of invalid numbers from an account with 0 credits, again and again, creating nothing', async () => {
    const account = await createAccount(t, { credits: 0 });
    for (let attempt = 0; attempt < 3; attempt++) {
      const res = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: invalid, callback_url: 'https://example.com/hook' });
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(/nothing to look up/);
    }
    const csv = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).set('Content-Type', 'text/csv').send(`phone\n${invalid.slice(0, 50).join('\n')}\n`);
    expectError(csv, 400, 'INVALID_REQUEST');
    expect(await jobsOf(account.id)).toBe(0);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 0, byType: {} });
  });

  it('still takes a job with one valid number among invalid ones (the invalid ones free), and quotes an all-invalid one as cost 0', async () => {
    const account = await createAccount(t, { credits: 40 });
    const res = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: ['+447400123456', ...invalid.slice(0, 9)] });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ total: 10, cost: 4 });
    const quote = await request(t.http).post('/api/v1/filter/bulk/quote').set(account.auth).send({ phones: invalid.slice(0, 5) }).expect(200);
    expect(quote.body).toMatchObject({ total: 5, billable: 0, cost: 0 });
  });
});
