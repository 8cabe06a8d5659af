import request from 'supertest';
import type { CheckAdapter, CheckAnswer, CheckRegistration } from '../src/checks/check-definition';
import { LookupService } from '../src/provider/lookup.service';
import { createAccount, TestAccount } from './factories/accounts';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * A SIM-swap check registered in the test (until a real one is registered, a verdict reads whichever
 * check's cached record holds `sim_swapped` / `last_sim_swap_at`): every number's SIM changed an hour ago.
 */
class RecentSwaps implements CheckAdapter {
  async answer(check: string): Promise<CheckAnswer> {
    const observedAt = new Date().toISOString();
    return { check, fields: { sim_swapped: true, last_sim_swap_at: new Date(Date.now() - 3_600_000).toISOString() }, provider: 'swap-test', observedAt };
  }
}
const SWAP_CHECK: CheckRegistration = {
  definition: {
    name: 'swap_test',
    title: 'SIM swap (test)',
    defaultEnabled: false,
    price: { variable: 'PRICE_SWAP_TEST', default: 1 },
    cacheTtlSeconds: { variable: 'CACHE_TTL_SWAP_TEST_SECONDS', default: 600 },
    fields: ['sim_swapped', 'last_sim_swap_at'],
    shows: {},
    reports: ['sim_swapped'],
    watches: [],
    csvColumns: [],
  },
  adapter: new RecentSwaps(),
};

const PRICE = 2;

describe('POST /api/v1/risk', () => {
  let t: TestApp;
  // The counters in memory: this file is about the route (the Redis store, its sharing and its 503 are
  // proven by test/risk-instances.e2e-spec.ts, test/medium/risk/counters.medium-spec.ts and the case below;
  // on a loaded machine Redis's fail-fast command timeout would answer some of these calls 503).
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox', REDIS_URL: undefined }, { checks: [SWAP_CHECK] })));
  afterAll(() => t.close());

  const risk = (account: TestAccount, body: object, headers: Record<string, string> = {}) =>
    request(t.http).post('/api/v1/risk').set(account.auth).set(headers).send(body);
  const feedback = (account: TestAccount, body: object) => request(t.http).post('/api/v1/risk/feedback').set(account.auth).send(body);
  const codes = (res: request.Response) => (res.body.reasons as Array<{ code: string }>).map((reason) => reason.code);

  it('answers a clean mobile number allow, with the shape of the contract, charged the price once and settled', async () => {
    const account = await createAccount(t, { credits: 100 });
    const res = await risk(account, { phone: '+44 7400 123456', source: 'signup-form', event: 'signup', ip: '203.0.113.7' }).expect(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual({ score: 0, level: 'low', recommendation: 'allow', reasons: [] });
    const state = await ledgerState(t.db, account.id);
    expect(state).toMatchObject({ balance: 100 - PRICE, ledgerSum: 100 - PRICE, unsettledCharges: 0 });
    // The ledger row keeps the masked number only, like /filter's.
    const [row] = await t.db.query(`SELECT phone, source FROM ledger_entries WHERE account_id = $1 AND type = 'CHARGE'`, [account.id]);
    expect(row).toEqual({ phone: '+44740012****', source: 'signup-form' });
  });

  it('blocks a premium-rate number, with a reason in plain words', async () => {
    const account = await createAccount(t, { credits: 100 });
    const res = await risk(account, { phone: '+449098790000' }).expect(200);
    expect(res.body).toMatchObject({ level: 'high', recommendation: 'block' });
    expect(codes(res)).toEqual(['PREMIUM_RATE']);
    expect(res.body.reasons[0].message).toMatch(/premium-rate/);
    expect(res.body.score).toBeGreaterThanOrEqual(70);
  });

  it('flags a run of near-consecutive numbers from its third number, and blocks as it goes on', async () => {
    const account = await createAccount(t, { credits: 100 });
    const verdicts: string[] = [];
    for (const last of ['11', '12', '13', '14', '15']) {
      const res = await risk(account, { phone: `+4474001299${last}`, source: 'burst' }).expect(200);
      verdicts.push(res.body.recommendation);
      if (verdicts.length === 3) expect(codes(res)).toContain('SEQUENTIAL_NUMBERS');
    }
    expect(verdicts).toEqual(['allow', 'allow', 'block', 'block', 'block']);
  });

  it('keeps sources apart: the same numbers from two sources are two flows', async () => {
    const account = await createAccount(t, { credits: 100 });
    const a = await risk(account, { phone: '+447400130011', source: 'web' }).expect(200);
    const b = await risk(account, { phone: '+447400130012', source: 'app' }).expect(200);
    expect([a.body.recommendation, b.body.recommendation]).toEqual(['allow', 'allow']);
  });

  it('flags one IP asking for numbers of many countries', async () => {
    const account = await createAccount(t, { credits: 100 });
    const ip = '198.51.100.23';
    const phones = ['+4915212345678', '+33612345678', '+393471234567'];
    const answers = [];
    for (const phone of phones) answers.push((await risk(account, { phone, ip }).expect(200)).body);
    expect(answers.map((answer) => answer.recommendation)).toEqual(['allow', 'allow', 'flag']);
    expect(answers[2].reasons.map((reason: { code: string }) => reason.code)).toEqual(['MANY_COUNTRIES']);
  });

  it('reads liveness from the lookup cache: a number last answered ABSENT is NOT_LIVE', async () => {
    const account = await createAccount(t, { credits: 100 });
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.absent }).expect(200);
    const res = await risk(account, { phone: TEST_NUMBERS.absent }).expect(200);
    expect(codes(res)).toEqual(['NOT_LIVE']);
    expect(res.body.recommendation).toBe('flag');
  });

  it('never asks a provider: a number nobody looked up has no liveness reason, whatever the sandbox would say', async () => {
    const account = await createAccount(t, { credits: 100 });
    const lookups = t.app.get(LookupService);
    const asked = () => Object.values(lookups.counters.lookups).reduce((sum, outcomes) => sum + Object.values(outcomes).reduce((a, b) => a + b, 0), 0);
    const before = asked();
    const res = await risk(account, { phone: '+447400140000' }).expect(200);
    expect(codes(res)).toEqual([]);
    expect(asked()).toBe(before);
  });

  it('reads a SIM swap from a cached answer: it blocks a login and only notes a sign-up', async () => {
    const looker = await createAccount(t, { credits: 100 });
    await request(t.http).patch('/api/v1/settings').set(looker.auth).send({ checks: { swap_test: true } }).expect(200);
    await request(t.http).post('/api/v1/filter').set(looker.auth).send({ phone: '+447400150001' }).expect(200);
    const account = await createAccount(t, { credits: 100 });
    const login = await risk(account, { phone: '+447400150001', event: 'login' }).expect(200);
    expect(codes(login)).toEqual(['RECENT_SIM_SWAP']);
    expect(login.body.recommendation).toBe('block');
    const signup = await risk(account, { phone: '+447400150001', event: 'signup' }).expect(200);
    expect(signup.body).toMatchObject({ recommendation: 'allow', reasons: [{ code: 'RECENT_SIM_SWAP' }] });
  });

  it.each([
    ['a malformed number', { phone: '12345' }, /E\.164/],
    ['a national number', { phone: '07400 123456' }, /national number/],
    ['no number', { source: 'web' }, /phone is required/],
    ['an unknown event', { phone: '+447400123456', event: 'checkout' }, /event must be one of signup, login, otp, other/],
    ['an IP that is not one', { phone: '+447400123456', ip: '999.1.1.1' }, /ip must be an IPv4 or IPv6 address/],
    ['an unknown field', { phone: '+447400123456', phon: 'x' }, /unknown field "phon"/],
    ['a bad source', { phone: '+447400123456', source: 'a b' }, /source must be/],
  ])('answers 400 INVALID_REQUEST for %s, and charges nothing', async (_, body, message) => {
    const account = await createAccount(t, { credits: 100 });
    const res = await risk(account, body);
    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.message).toMatch(message);
    expect((await ledgerState(t.db, account.id)).balance).toBe(100);
  });

  it('answers 401 without a key', async () => {
    expectError(await request(t.http).post('/api/v1/risk').send({ phone: '+447400123456' }), 401, 'INVALID_API_KEY');
  });

  it('answers 402 INSUFFICIENT_CREDITS below the price, and charges nothing', async () => {
    const account = await createAccount(t, { credits: PRICE - 1 });
    const res = await risk(account, { phone: '+447400123456' });
    expectError(res, 402, 'INSUFFICIENT_CREDITS');
    expect(res.body.error.message).toContain(`this call costs ${PRICE}`);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: PRICE - 1, ledgerSum: PRICE - 1 });
  });

  it('answers 429 RATE_LIMITED with Retry-After past the plan limit, and charges nothing for it', async () => {
    await t.db.query(`INSERT INTO plans (name, "limit", window_seconds) VALUES ('risk-two-a-minute', 2, 60) ON CONFLICT (name) DO NOTHING`);
    const account = await createAccount(t, { credits: 100, plan: 'risk-two-a-minute' });
    await risk(account, { phone: '+447400160001' }).expect(200);
    await risk(account, { phone: '+447400160101' }).expect(200);
    const res = await risk(account, { phone: '+447400160201' });
    expectError(res, 429, 'RATE_LIMITED');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect((await ledgerState(t.db, account.id)).balance).toBe(100 - 2 * PRICE);
  });

  describe('Idempotency-Key', () => {
    it('replays the first verdict byte for byte, charged once, even when the counters moved since', async () => {
      const account = await createAccount(t, { credits: 100 });
      const body = { phone: '+447400170011', source: 'idem' };
      const first = await risk(account, body, { 'Idempotency-Key': 'signup-42' }).expect(200);
      // Two more numbers of the run: a new verdict for the first number would now see them.
      await risk(account, { phone: '+447400170012', source: 'idem' }).expect(200);
      await risk(account, { phone: '+447400170013', source: 'idem' }).expect(200);
      const again = await risk(account, body, { 'Idempotency-Key': 'signup-42' }).expect(200);
      expect(again.text).toBe(first.text);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect((await ledgerState(t.db, account.id)).balance).toBe(100 - 3 * PRICE);
    });

    it('answers 409 IDEMPOTENCY_CONFLICT for the same key with another body, and charges nothing more', async () => {
      const account = await createAccount(t, { credits: 100 });
      await risk(account, { phone: '+447400180011' }, { 'Idempotency-Key': 'k-1' }).expect(200);
      expectError(await risk(account, { phone: '+447400180099' }, { 'Idempotency-Key': 'k-1' }), 409, 'IDEMPOTENCY_CONFLICT');
      expect((await ledgerState(t.db, account.id)).balance).toBe(100 - PRICE);
    });

    it('answers 400 for a malformed key', async () => {
      const account = await createAccount(t, { credits: 100 });
      expectError(await risk(account, { phone: '+447400123456' }, { 'Idempotency-Key': 'x'.repeat(256) }), 400, 'INVALID_REQUEST');
    });
  });

  describe('POST /api/v1/risk/feedback', () => {
    it('records feedback on a verdict of the account, free, again if sent again', async () => {
      const account = await createAccount(t, { credits: 100 });
      await risk(account, { phone: '+447400190011' }).expect(200);
      expect((await feedback(account, { phone: '+44 7400 190011', verified: false }).expect(200)).body).toEqual({ recorded: true });
      expect((await feedback(account, { phone: '+447400190011', verified: true }).expect(200)).body).toEqual({ recorded: true });
      expect((await ledgerState(t.db, account.id)).balance).toBe(100 - PRICE);
      const rows = await t.db.query(`SELECT verified, phone_hash FROM risk_feedback WHERE account_id = $1`, [account.id]);
      expect(rows).toEqual([{ verified: true, phone_hash: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    });

    it("answers 404 NOT_FOUND for a number the account asked no verdict for (another account's included)", async () => {
      const asker = await createAccount(t, { credits: 100 });
      const other = await createAccount(t, { credits: 100 });
      await risk(asker, { phone: '+447400190022' }).expect(200);
      const res = await feedback(other, { phone: '+447400190022', verified: true });
      expectError(res, 404, 'NOT_FOUND');
      expect(res.body.error.message).toMatch(/asked no risk verdict for this number in the last 24 hours/);
      expect(res.body.error.message).not.toMatch(/7400/);
    });

    it.each([
      ['no verified', { phone: '+447400123456' }, /verified is required/],
      ['verified not a boolean', { phone: '+447400123456', verified: 'yes' }, /verified must be true or false/],
      ['a malformed number', { phone: '0044', verified: true }, /E\.164/],
    ])('answers 400 for %s', async (_, body, message) => {
      const account = await createAccount(t, { credits: 100 });
      const res = await feedback(account, body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(message);
    });
  });

  describe('settings `risk`', () => {
    it('shows every threshold with its default, takes changes, and applies them to the next verdict', async () => {
      const account = await createAccount(t, { credits: 100 });
      const before = await request(t.http).get('/api/v1/settings').set(account.auth).expect(200);
      expect(before.body.risk.thresholds).toMatchObject({ flag_score: 30, block_score: 70, sequential_numbers: 3 });
      expect(before.body.risk.destinations).toEqual({});
      const after = await request(t.http)
        .patch('/api/v1/settings')
        .set(account.auth)
        .send({ risk: { thresholds: { flag_score: 96, block_score: 98 }, destinations: { GB: 100 } } })
        .expect(200);
      expect(after.body.risk).toMatchObject({ thresholds: { flag_score: 96, block_score: 98, range_velocity_hour: 4 }, destinations: { GB: 100 } });
      // A block_score below the flag_score is refused, and nothing changes.
      expectError(await request(t.http).patch('/api/v1/settings').set(account.auth).send({ risk: { thresholds: { block_score: 50 } } }), 400, 'INVALID_REQUEST');
      const res = await risk(account, { phone: '+447400200011' }).expect(200);
      expect(res.body.reasons).toEqual([{ code: 'HIGH_RISK_DESTINATION', message: expect.stringMatching(/Your account's adjustment of the destination table rates numbers of GB at risk 100/) }]);
      expect(res.body.recommendation).toBe('allow');
      const reset = await request(t.http)
        .patch('/api/v1/settings')
        .set(account.auth)
        .send({ risk: { thresholds: { flag_score: null, block_score: null }, destinations: { GB: null } } })
        .expect(200);
      expect(reset.body.risk).toMatchObject({ thresholds: { flag_score: 30, block_score: 70 }, destinations: {} });
    });

    it.each([
      [{ risk: { thresholds: { flag_scor: 10 } } }, /unknown field "risk.thresholds.flag_scor"/],
      [{ risk: { thresholds: { flag_score: 0 } } }, /risk.thresholds.flag_score must be null or an integer from 1 to 100/],
      [{ risk: { destinations: { Britain: 10 } } }, /must be a country/],
      [{ risk: { destinations: { GB: 101 } } }, /risk.destinations.GB must be null or an integer from 0 to 100/],
      [{ risk: { limits: {} } }, /unknown field "risk.limits"/],
    ])('refuses %j with 400', async (body, message) => {
      const account = await createAccount(t, { credits: 100 });
      const res = await request(t.http).patch('/api/v1/settings').set(account.auth).send(body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(message);
    });
  });
});

describe('POST /api/v1/risk when its counters cannot be reached', () => {
  let t: TestApp;
  // A Redis that is not there: the plan limit and the cache go on without it (as they always do); the verdict cannot.
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox', REDIS_URL: 'redis://127.0.0.1:1' })));
  afterAll(() => t.close());

  it('answers 503 SERVICE_UNAVAILABLE and refunds the charge', async () => {
    const account = await createAccount(t, { credits: 100 });
    const res = await request(t.http).post('/api/v1/risk').set(account.auth).send({ phone: '+447400123456' });
    expectError(res, 503, 'SERVICE_UNAVAILABLE');
    expect(res.body.error.message).toMatch(/risk counters \(Redis\) could not be reached/);
    const state = await ledgerState(t.db, account.id);
    expect(state).toMatchObject({ balance: 100, ledgerSum: 100, unsettledCharges: 0, byType: { CHARGE: 1, REFUND: 1, TOPUP: 1 } });
  });
});
