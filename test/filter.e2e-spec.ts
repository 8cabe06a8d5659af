import request from 'supertest';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount, TestAccount } from './factories/accounts';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { SIX_FIELDS, TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

const COMBINATIONS: Array<[boolean, boolean, boolean, number]> = [
  [false, true, false, 1],
  [false, false, true, 2],
  [false, true, true, 3],
  [true, false, false, 4],
  [true, true, false, 5],
  [true, false, true, 6],
  [true, true, true, 7],
];

describe('POST /api/v1/filter (sandbox provider)', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '300' })));
  afterAll(() => t.close());

  const filter = (account: TestAccount, body: unknown) => request(t.http).post('/api/v1/filter').set(account.auth).send(body as object);
  const setChecks = (account: TestAccount, checks: Record<string, boolean>) =>
    request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks }).expect(200);

  it.each(COMBINATIONS)(
    'with network_status=%p line_type=%p portability=%p: six fields, and the balance drops by exactly %i',
    async (networkStatus, lineType, portability, cost) => {
      const account = await createAccount(t, { credits: 100 });
      const settings = await setChecks(account, { network_status: networkStatus, line_type: lineType, portability });
      expect(settings.body.cost_per_call).toBe(cost);
      const res = await filter(account, { phone: TEST_NUMBERS.connected }).expect(200);
      expect(Object.keys(res.body).sort()).toEqual(SIX_FIELDS);
      expect(res.body).toEqual({
        country: 'GB',
        valid: true,
        status: networkStatus ? 'CONNECTED' : 'UNDETERMINED',
        carrier: networkStatus || portability ? expect.any(String) : null,
        line_type: lineType ? 'MOBILE' : 'UNKNOWN',
        is_ported: false,
      });
      const state = await ledgerState(t.db, account.id);
      expect(state.balance).toBe(100 - cost);
      expect(state.ledgerSum).toBe(state.balance);
      expect(state.unsettledCharges).toBe(0);
    },
  );

  it('answers 400 when every check is disabled, and charges nothing', async () => {
    const account = await createAccount(t, { credits: 100 });
    const settings = await setChecks(account, { network_status: false, line_type: false, portability: false });
    expect(settings.body.cost_per_call).toBe(0);
    const res = await filter(account, { phone: TEST_NUMBERS.connected });
    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.message).toMatch(/No check is enabled/);
    expect((await ledgerState(t.db, account.id)).balance).toBe(100);
  });

  describe('the sandbox test numbers', () => {
    let account: TestAccount;
    beforeAll(async () => {
      account = await createAccount(t, { credits: 1000 });
      await setChecks(account, { network_status: true, line_type: true, portability: true });
    });

    it.each([
      ['connected', { valid: true, status: 'CONNECTED', is_ported: false }],
      ['absent', { valid: false, status: 'ABSENT', is_ported: false }],
      ['undetermined', { valid: true, status: 'UNDETERMINED', is_ported: false }],
      ['ported', { valid: true, status: 'CONNECTED', is_ported: true }],
    ] as const)('%s', async (name, expected) => {
      const res = await filter(account, { phone: TEST_NUMBERS[name] }).expect(200);
      expect(res.body).toMatchObject({ country: 'GB', line_type: 'MOBILE', ...expected });
    });

    it('gives a ported number a different carrier than its range', async () => {
      const ported = await filter(account, { phone: TEST_NUMBERS.ported }).expect(200);
      const connected = await filter(account, { phone: TEST_NUMBERS.connected }).expect(200);
      expect(ported.body.carrier).toEqual(expect.any(String));
      expect(ported.body.carrier).not.toBe(connected.body.carrier);
    });

    it.each(['failing', 'slow'] as const)('refunds a %s upstream: 503, balance unchanged, one CHARGE and one REFUND', async (name) => {
      const victim = await createAccount(t, { credits: 50 });
      const res = await filter(victim, { phone: TEST_NUMBERS[name] });
      expectError(res, 503, 'PROVIDER_UNAVAILABLE');
      const state = await ledgerState(t.db, victim.id);
      expect(state).toEqual({ balance: 50, ledgerSum: 50, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
    });
  });

  it('answers an E.164 number that is not valid for its plan with 200 valid:false ABSENT, charged', async () => {
    const account = await createAccount(t, { credits: 10 });
    const res = await filter(account, { phone: '+10000000000' }).expect(200);
    expect(res.body).toEqual({ country: null, valid: false, status: 'ABSENT', carrier: null, line_type: 'UNKNOWN', is_ported: false });
    expect((await ledgerState(t.db, account.id)).balance).toBe(6);
  });

  it.each([
    [{}, /phone is required/],
    [{ phone: 14155552671 }, /phone must be a string/],
    [{ phone: '14155552671' }, /E\.164/],
    [{ phone: '+0123' }, /E\.164/],
    [{ phone: '+1234567890123456' }, /E\.164/],
    [{ phone: '+14155552671', source: '' }, /source must be/],
    [{ phone: '+14155552671', source: 'x'.repeat(65) }, /source must be/],
    [{ phone: '+14155552671', source: 'no spaces' }, /source must be/],
    [{ phone: '+14155552671', extra: 1 }, /unknown field "extra"/],
  ])('refuses %j with 400 and charges nothing', async (body, message) => {
    const account = await createAccount(t, { credits: 10 });
    const res = await filter(account, body);
    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.message).toMatch(message);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 10, byType: { TOPUP: 1 } });
  });

  it('ignores spaces, dashes, dots and parentheses in the phone', async () => {
    const account = await createAccount(t, { credits: 10 });
    const res = await filter(account, { phone: '+44 (7400) 123-456' }).expect(200);
    expect(res.body.country).toBe('GB');
  });

  it('records the source (default "internal") and the masked phone on the ledger', async () => {
    const account = await createAccount(t, { credits: 100 });
    await filter(account, { phone: TEST_NUMBERS.connected, source: 'crm-import' }).expect(200);
    await filter(account, { phone: TEST_NUMBERS.connected }).expect(200);
    const usage = await request(t.http).get('/api/v1/usage').set(account.auth).expect(200);
    expect(usage.body.entries.map((entry: { source: string }) => entry.source)).toEqual(['internal', 'crm-import', null]);
    expect(usage.body.entries[0]).toMatchObject({ type: 'CHARGE', amount: -4, balance_after: 92, phone: '+44740012****' });
    expect(JSON.stringify(usage.body)).not.toContain(TEST_NUMBERS.connected);
  });

  it('answers 402 when the balance is below the cost, with a message to top up, and charges nothing', async () => {
    const account = await createAccount(t, { credits: 3 });
    const res = await filter(account, { phone: TEST_NUMBERS.connected });
    expectError(res, 402, 'INSUFFICIENT_CREDITS');
    expect(res.body.error.message).toMatch(/run out.*top up/i);
    expect((await ledgerState(t.db, account.id)).balance).toBe(3);
  });

  describe('concurrency', () => {
    it('with credits for exactly 25 calls, 100 parallel calls: 25 answered, 75 get 402, balance 0 = ledger sum', async () => {
      const account = await createAccount(t, { credits: 25 * 4 });
      const responses = await Promise.all(Array.from({ length: 100 }, () => filter(account, { phone: TEST_NUMBERS.connected })));
      const statuses = responses.map((res) => res.status);
      expect(statuses.filter((status) => status === 200)).toHaveLength(25);
      expect(statuses.filter((status) => status === 402)).toHaveLength(75);
      const state = await ledgerState(t.db, account.id);
      expect(state).toEqual({ balance: 0, ledgerSum: 0, byType: { TOPUP: 1, CHARGE: 25 }, unsettledCharges: 0 });
    });

    it('refunds exactly once: 50 parallel calls to a failing number all get 503 and the balance is back', async () => {
      const account = await createAccount(t, { credits: 50 * 4 });
      const responses = await Promise.all(Array.from({ length: 50 }, () => filter(account, { phone: TEST_NUMBERS.failing })));
      expect(responses.map((res) => res.status)).toEqual(Array(50).fill(503));
      const state = await ledgerState(t.db, account.id);
      expect(state).toEqual({ balance: 200, ledgerSum: 200, byType: { TOPUP: 1, CHARGE: 50, REFUND: 50 }, unsettledCharges: 0 });
    });

    it('a refund asked twice (a retry, a sweep on another instance) is written once', async () => {
      const account = await createAccount(t, { credits: 10 });
      const [charge] = await t.db.query(
        `WITH d AS (UPDATE accounts SET balance = balance - 4 WHERE id = $1 RETURNING id, balance)
         INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference) SELECT id, 'CHARGE', -4, balance, 'charge:test-' || gen_random_uuid() FROM d RETURNING id`,
        [account.id],
      );
      const credits = t.app.get(CreditsService);
      const outcomes = await Promise.all(Array.from({ length: 10 }, () => credits.refund(charge.id, 'test')));
      expect(outcomes.filter(Boolean)).toHaveLength(1);
      expect(await ledgerState(t.db, account.id)).toEqual({ balance: 10, ledgerSum: 10, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the first answer for the same key and body, charged once', async () => {
      const account = await createAccount(t, { credits: 100 });
      const first = await filter(account, { phone: TEST_NUMBERS.connected }).set('Idempotency-Key', 'order-1').expect(200);
      const again = await filter(account, { phone: TEST_NUMBERS.connected }).set('Idempotency-Key', 'order-1').expect(200);
      expect(again.body).toEqual(first.body);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 } });
    });

    it('answers 409 for the same key with another body', async () => {
      const account = await createAccount(t, { credits: 100 });
      await filter(account, { phone: TEST_NUMBERS.connected }).set('Idempotency-Key', 'order-2').expect(200);
      const res = await filter(account, { phone: TEST_NUMBERS.ported }).set('Idempotency-Key', 'order-2');
      expectError(res, 409, 'IDEMPOTENCY_CONFLICT');
      expect((await ledgerState(t.db, account.id)).balance).toBe(96);
    });

    it('answers 409 while the first call with the key is still running', async () => {
      const account = await createAccount(t, { credits: 100 });
      const [slow, second] = await Promise.all([
        filter(account, { phone: TEST_NUMBERS.slow }).set('Idempotency-Key', 'order-3'),
        new Promise((resolve) => setTimeout(resolve, 100)).then(() => filter(account, { phone: TEST_NUMBERS.slow }).set('Idempotency-Key', 'order-3')),
      ]);
      expectError(slow, 503, 'PROVIDER_UNAVAILABLE');
      expectError(second, 409, 'IDEMPOTENCY_CONFLICT');
    });

    it('lets a failed (refunded) call be retried with the same key', async () => {
      const account = await createAccount(t, { credits: 100 });
      await filter(account, { phone: TEST_NUMBERS.failing }).set('Idempotency-Key', 'order-4').expect(503);
      await filter(account, { phone: TEST_NUMBERS.failing }).set('Idempotency-Key', 'order-4').expect(503);
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100, byType: { TOPUP: 1, CHARGE: 2, REFUND: 2 } });
    });

    it('is per account: another account may use the same key', async () => {
      const a = await createAccount(t, { credits: 100 });
      const b = await createAccount(t, { credits: 100 });
      await filter(a, { phone: TEST_NUMBERS.connected }).set('Idempotency-Key', 'shared').expect(200);
      const res = await filter(b, { phone: TEST_NUMBERS.ported }).set('Idempotency-Key', 'shared').expect(200);
      expect(res.headers['idempotent-replayed']).toBeUndefined();
    });

    it('refuses a key that is too long', async () => {
      const account = await createAccount(t, { credits: 100 });
      expectError(await filter(account, { phone: TEST_NUMBERS.connected }).set('Idempotency-Key', 'k'.repeat(256)), 400, 'INVALID_REQUEST');
    });
  });

  describe('GET /api/v1/usage', () => {
    it('pages newest first with a cursor', async () => {
      const account = await createAccount(t, { credits: 100 });
      for (let i = 0; i < 5; i++) await filter(account, { phone: TEST_NUMBERS.connected }).expect(200);
      const first = await request(t.http).get('/api/v1/usage?limit=4').set(account.auth).expect(200);
      expect(first.body.entries).toHaveLength(4);
      expect(first.body.entries.map((entry: { balance_after: number }) => entry.balance_after)).toEqual([80, 84, 88, 92]);
      const second = await request(t.http).get(`/api/v1/usage?limit=4&cursor=${first.body.next_cursor}`).set(account.auth).expect(200);
      expect(second.body.entries.map((entry: { type: string }) => entry.type)).toEqual(['CHARGE', 'TOPUP']);
      expect(second.body.next_cursor).toBeNull();
    });

    it.each(['limit=0', 'limit=101', 'limit=abc', 'cursor=nope', 'cursor=bGU6MA'])('refuses %s with 400', async (query) => {
      const account = await createAccount(t);
      expectError(await request(t.http).get(`/api/v1/usage?${query}`).set(account.auth), 400, 'INVALID_REQUEST');
    });
  });
});
