import request from 'supertest';
import { verifyCallback } from '../src/webhooks/callback-signature';
import { createAccount, TestAccount } from './factories/accounts';
import { waitForBulkJob } from './helpers/bulk';
import { eventually } from './helpers/eventually';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { CallbackReceiver as Receiver, startReceiver } from './helpers/callback-receiver';
import { startTestApp, TestApp } from './helpers/test-app';

describe('account controls in the settings, low-balance alerts and GET /api/v1/events', () => {
  let t: TestApp;
  let receiver: Receiver;
  beforeAll(async () => {
    t = await startTestApp({
      PROVIDER: 'sandbox',
      PROVIDER_TIMEOUT_MS: '300',
      EVENTS_POLL_INTERVAL_MS: '100',
      BULK_POLL_INTERVAL_SECONDS: '0.5',
      BULK_WEBHOOK_RETRIES: '2',
      BULK_WEBHOOK_RETRY_DELAY_SECONDS: '1',
      BULK_WEBHOOK_TIMEOUT_MS: '2000',
      BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', // the receivers listen on 127.0.0.1
    });
  });
  afterAll(() => t.close());
  beforeEach(async () => (receiver = await startReceiver()));
  afterEach(() => receiver.close());

  const settings = (account: TestAccount, body: object) => request(t.http).patch('/api/v1/settings').set(account.auth).send(body);
  const filter = (account: TestAccount, phone: string = TEST_NUMBERS.connected) => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone });
  const events = async (account: TestAccount, query = '') => (await request(t.http).get(`/api/v1/events${query}`).set(account.auth).expect(200)).body;
  const callsOf = (type: string) => receiver.calls.filter((call) => JSON.parse(call.body).type === type);
  /**
   * The account's outbox once nothing in it is pending: the charge statements write their events
   * before the calls answer, so after that every delivery there will be has been made.
   */
  const settledOutbox = (account: TestAccount): Promise<Array<{ type: string; state: string }>> =>
    eventually(
      () => t.db.query(`SELECT type, state FROM account_events WHERE account_id = $1 ORDER BY id`, [account.id]),
      (rows: Array<{ state: string }>) => rows.length > 0 && rows.every((row) => row.state !== 'pending'),
      10_000,
    );
  async function expectBalance(account: TestAccount, balance: number): Promise<void> {
    const state = await ledgerState(t.db, account.id);
    expect({ balance: state.balance, ledgerSum: state.ledgerSum }).toEqual({ balance, ledgerSum: balance });
  }

  describe('PATCH /api/v1/settings with the controls', () => {
    it('sets, shows and clears daily_credit_limit, low_balance_threshold and webhook_url', async () => {
      const account = await createAccount(t, { credits: 100 });
      const before = (await request(t.http).get('/api/v1/settings').set(account.auth).expect(200)).body;
      expect(before).toMatchObject({ daily_credit_limit: null, low_balance_threshold: null, webhook_url: null });
      const set = await settings(account, { daily_credit_limit: 500, low_balance_threshold: 50, webhook_url: 'https://example.com/hooks' }).expect(200);
      expect(set.body).toMatchObject({ checks: before.checks, cost_per_call: 4, daily_credit_limit: 500, low_balance_threshold: 50, webhook_url: 'https://example.com/hooks' });
      const cleared = await settings(account, { daily_credit_limit: null, checks: { line_type: true } }).expect(200);
      expect(cleared.body).toMatchObject({ daily_credit_limit: null, low_balance_threshold: 50, webhook_url: 'https://example.com/hooks', cost_per_call: 5 });
      expect((await request(t.http).get('/api/v1/settings').set(account.auth).expect(200)).body).toEqual(cleared.body);
    });

    it.each([
      [{}, /Send at least one of/],
      [{ daily_credit_limit: -1 }, /daily_credit_limit must not be less than 0/],
      [{ daily_credit_limit: 1.5 }, /daily_credit_limit must be an integer/],
      [{ daily_credit_limit: '100' }, /daily_credit_limit must be an integer/],
      [{ low_balance_threshold: 1e13 }, /low_balance_threshold must not be greater than/],
      [{ webhook_url: 'ftp://example.com/x' }, /webhook_url must be an http or https URL/],
      [{ webhook_url: 'not a url' }, /webhook_url must be an http or https URL/],
      [{ spending: 1 }, /unknown field "spending"/],
    ])('refuses %j with 400', async (body, message) => {
      const account = await createAccount(t, { credits: 100 });
      const res = await settings(account, body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(message);
    });

    it('refuses a webhook_url at a private address unless private networks are allowed (the callback_url rule)', async () => {
      const strict = await startTestApp({ PROVIDER: 'sandbox' });
      try {
        const account = await createAccount(strict, { credits: 10 });
        for (const url of ['http://127.0.0.1:9/x', 'http://localhost/x', 'http://169.254.169.254/latest', 'http://[::1]/x']) {
          const res = await request(strict.http).patch('/api/v1/settings').set(account.auth).send({ webhook_url: url });
          expectError(res, 400, 'INVALID_REQUEST');
          expect(res.body.error.message).toMatch(/webhook_url must point to a public address/);
        }
      } finally {
        await strict.close();
      }
    });
  });

  describe('balance.low', () => {
    it('sends one signed event when a charge takes the balance below the threshold, and none for the charges after', async () => {
      const account = await createAccount(t, { credits: 20 });
      const { webhook_secret: secret } = (await settings(account, { low_balance_threshold: 10, webhook_url: receiver.url }).expect(200)).body;
      for (let i = 0; i < 5; i++) await filter(account).expect(200); // 16, 12, 8 (crossing), 4, 0
      expect(await settledOutbox(account)).toEqual([{ type: 'balance.low', state: 'delivered' }]);
      expect(receiver.calls).toHaveLength(1);
      const [call] = receiver.calls;
      const body = JSON.parse(call.body);
      expect(body).toEqual({ id: expect.any(String), type: 'balance.low', created_at: expect.any(String), data: { account_id: account.id, balance: 8, threshold: 10 } });
      const headers = { signature: call.headers['x-signature'] as string, timestamp: call.headers['x-signature-timestamp'] as string };
      expect(verifyCallback(secret, headers, call.body)).toBe(true);
      const listed = await events(account);
      expect(listed).toEqual({
        events: [{ id: body.id, type: 'balance.low', data: body.data, state: 'delivered', attempts: 1, last_error: null, created_at: body.created_at, delivered_at: expect.any(String) }],
        next_cursor: null,
      });
      await expectBalance(account, 0);
    });

    it('is re-armed by a top-up above the threshold, not by a refund', async () => {
      const account = await createAccount(t, { credits: 12 });
      await settings(account, { low_balance_threshold: 10, webhook_url: receiver.url }).expect(200);
      await filter(account).expect(200); // 12 → 8: first crossing
      await filter(account, TEST_NUMBERS.failing).expect(503); // 8 → 4 → refunded to 8
      await t.admin.changeCredits(account.id, 1, 'not enough to re-arm', 'test'); // 9, still below
      await t.admin.changeCredits(account.id, 11, 'back above', 'test'); // 20: re-armed
      await filter(account).expect(200); // 16
      await filter(account).expect(200); // 12
      await filter(account).expect(200); // 8: second crossing
      expect(await settledOutbox(account)).toEqual(Array(2).fill({ type: 'balance.low', state: 'delivered' }));
      expect(receiver.calls.map((call) => JSON.parse(call.body).data)).toEqual([
        { account_id: account.id, balance: 8, threshold: 10 },
        { account_id: account.id, balance: 8, threshold: 10 },
      ]);
      await expectBalance(account, 8);
    });

    it('sends exactly one event when 50 concurrent calls cross the threshold together', async () => {
      const account = await createAccount(t, { credits: 400 });
      await settings(account, { low_balance_threshold: 250, webhook_url: receiver.url }).expect(200);
      const answers = await Promise.all(Array.from({ length: 50 }, () => filter(account)));
      expect(answers.every((res) => res.status === 200)).toBe(true);
      expect(await settledOutbox(account)).toEqual([{ type: 'balance.low', state: 'delivered' }]);
      expect(receiver.calls).toHaveLength(1);
      const { data } = JSON.parse(receiver.calls[0].body);
      // The charge that crossed: from 252 or more to 248 or less (charges of one statement count together).
      expect(data.threshold).toBe(250);
      expect(data.balance).toBeLessThan(250);
      expect(data.balance % 4).toBe(0);
      expect(data.balance).toBeGreaterThanOrEqual(200);
      await expectBalance(account, 200);
    });

    it('is sent for a bulk reservation that crosses the threshold, and the job completion goes to webhook_url too', async () => {
      const account = await createAccount(t, { credits: 30 });
      await settings(account, { low_balance_threshold: 25, webhook_url: receiver.url }).expect(200);
      const { body } = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: [TEST_NUMBERS.connected, TEST_NUMBERS.absent] }).expect(202);
      await waitForBulkJob(t.http, account.auth, body.id);
      expect(await settledOutbox(account)).toEqual([
        { type: 'balance.low', state: 'delivered' },
        { type: 'bulk.completed', state: 'delivered' },
      ]);
      expect(callsOf('balance.low').map((call) => JSON.parse(call.body).data)).toEqual([{ account_id: account.id, balance: 22, threshold: 25 }]);
      expect(callsOf('bulk.completed').map((call) => JSON.parse(call.body).data)).toEqual([{ id: body.id, status: 'completed', total: 2 }]);
      expect((await events(account)).events.map((event: { type: string; state: string }) => [event.type, event.state])).toEqual([
        ['bulk.completed', 'delivered'],
        ['balance.low', 'delivered'],
      ]);
      await expectBalance(account, 22);
    });
    // Retries, their backoff, give-up and no_webhook: test/medium/webhooks/outbox-delivery.medium-spec.ts.
  });

  describe('GET /api/v1/events', () => {
    it('pages newest first with the one keyset pager, and shows only the account\'s own events', async () => {
      const account = await createAccount(t, { credits: 1000 });
      const other = await createAccount(t, { credits: 1000 });
      await settings(account, { webhook_url: receiver.url }).expect(200);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        ids.push((await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: [TEST_NUMBERS.connected] }).expect(202)).body.id);
        await waitForBulkJob(t.http, account.auth, ids[i]);
      }
      await eventually(() => receiver.calls.length, (n) => n >= 3, 10_000);
      const first = await events(account, '?limit=2');
      expect(first.events.map((event: { data: { id: string } }) => event.data.id)).toEqual([ids[2], ids[1]]);
      const second = await events(account, `?limit=2&cursor=${first.next_cursor}`);
      expect(second).toEqual({ events: [expect.objectContaining({ type: 'bulk.completed', data: { id: ids[0], status: 'completed', total: 1 } })], next_cursor: null });
      expect(await events(other)).toEqual({ events: [], next_cursor: null });
      expectError(await request(t.http).get('/api/v1/events?cursor=bogus').set(account.auth), 400, 'INVALID_REQUEST');
      expectError(await request(t.http).get('/api/v1/events?limit=500').set(account.auth), 400, 'INVALID_REQUEST');
    });

    it('answers 401 without a key', async () => {
      expectError(await request(t.http).get('/api/v1/events'), 401, 'INVALID_API_KEY');
    });
  });
});
