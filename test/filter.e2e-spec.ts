import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { SIX_FIELDS, TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * POST /api/v1/filter over HTTP: the contract (answers of the test numbers, validation, 402, the
 * Idempotency-Key headers, usage pages). The charge arithmetic of each set of checks, refunds,
 * concurrency and the keys' charges are proven through the service in test/medium/filter/paid-lookup.medium-spec.ts.
 */
describe('POST /api/v1/filter (sandbox provider)', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '300' })));
  afterAll(() => t.close());

  const filter = (account: TestAccount, body: unknown) => request(t.http).post('/api/v1/filter').set(account.auth).send(body as object);
  const setChecks = (account: TestAccount, checks: Record<string, boolean>) =>
    request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks }).expect(200);

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
      expect(Object.keys(res.body).sort()).toEqual(SIX_FIELDS);
      expect(res.body).toMatchObject({ country: 'GB', line_type: 'MOBILE', ...expected });
    });

    it('gives a ported number a different carrier than its range', async () => {
      const ported = await filter(account, { phone: TEST_NUMBERS.ported }).expect(200);
      const connected = await filter(account, { phone: TEST_NUMBERS.connected }).expect(200);
      expect(ported.body.carrier).toEqual(expect.any(String));
      expect(ported.body.carrier).not.toBe(connected.body.carrier);
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
