import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { ApiKeysService } from '../src/auth/api-keys.service';
import { createAccount, TestAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { startTestApp, TestApp } from './helpers/test-app';

const ADMIN_TOKEN = 'test-admin-token-0123456789';
const ADMIN = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const UNKNOWN_UUID = '00000000-0000-4000-8000-000000000000';

function expectError(res: request.Response, status: number, code: string, messagePart?: string | RegExp): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'message']);
  expect(res.headers['content-type']).toMatch(/^application\/json; charset=utf-8/);
  if (messagePart) expect(res.body.error.message).toMatch(messagePart);
}

async function ledgerSum(t: TestApp, accountId: string): Promise<number> {
  const rows: Array<{ sum: string }> = await t.db.query(`SELECT COALESCE(SUM(amount), 0) AS sum FROM ledger_entries WHERE account_id = $1`, [accountId]);
  return Number(rows[0].sum);
}

async function balanceOf(t: TestApp, accountId: string): Promise<number> {
  const rows: Array<{ balance: string }> = await t.db.query(`SELECT balance FROM accounts WHERE id = $1`, [accountId]);
  return Number(rows[0].balance);
}

async function auditFor(t: TestApp, targetId: string): Promise<Array<Record<string, unknown>>> {
  const res = await request(t.http).get('/admin/v1/audit').query({ target_id: targetId }).set(ADMIN);
  expect(res.status).toBe(200);
  return res.body.entries;
}

/** A plan of this test file only: changing the seeded ones would disturb the other suites sharing the database. */
async function createTestPlan(t: TestApp, limit = 7, windowSeconds = 1): Promise<string> {
  const name = `t-${randomUUID().slice(0, 8)}`;
  await t.db.query(`INSERT INTO plans (name, "limit", window_seconds) VALUES ($1, $2, $3)`, [name, limit, windowSeconds]);
  return name;
}

describe('admin API /admin/v1', () => {
  let t: TestApp;
  let off: TestApp;
  let customer: TestAccount;
  let keyOfCustomer: string;

  beforeAll(async () => {
    // Wrong tokens count against the failed-authentication limit (request-safety.e2e-spec.ts); this suite
    // sends many on purpose, from one address, and must keep reaching the guard's answer.
    t = await startTestApp({ ADMIN_TOKEN, IP_RATE_LIMIT: '100000' });
    off = await startTestApp({ ADMIN_TOKEN: undefined });
    customer = await createAccount(t, { credits: 100 });
    keyOfCustomer = (await t.admin.getAccount(customer.id)).keys[0].id;
  });
  afterAll(async () => {
    await t.close();
    await off.close();
  });

  describe('access', () => {
    const routes = (): Array<{ method: 'get' | 'post' | 'patch' | 'put'; path: string; body?: object }> => [
      { method: 'post', path: '/admin/v1/accounts', body: { name: 'never created' } },
      { method: 'get', path: `/admin/v1/accounts/${customer.id}` },
      { method: 'patch', path: `/admin/v1/accounts/${customer.id}`, body: { disabled: true } },
      { method: 'post', path: `/admin/v1/accounts/${customer.id}/credits`, body: { amount: 5, reason: 'never applied' } },
      { method: 'post', path: `/admin/v1/accounts/${customer.id}/keys` },
      { method: 'post', path: `/admin/v1/keys/${keyOfCustomer}/revoke` },
      { method: 'get', path: '/admin/v1/plans' },
      { method: 'put', path: '/admin/v1/plans/free', body: { limit: 1, window_seconds: 60 } },
      { method: 'get', path: '/admin/v1/audit' },
    ];
    const send = (app: TestApp, route: ReturnType<typeof routes>[number], headers: Record<string, string>) => {
      const req = request(app.http)[route.method](route.path).set(headers);
      return route.body ? req.send(route.body) : req;
    };

    it('refuses every route without an Authorization header (401 INVALID_API_KEY)', async () => {
      for (const route of routes()) expectError(await send(t, route, {}), 401, 'INVALID_API_KEY', /ADMIN_TOKEN/);
    });

    it('refuses every route with a wrong admin token or a wrong scheme (401 INVALID_API_KEY)', async () => {
      for (const route of routes()) {
        expectError(await send(t, route, { Authorization: `Bearer ${ADMIN_TOKEN}x` }), 401, 'INVALID_API_KEY', /Wrong admin token/);
        expectError(await send(t, route, { Authorization: 'Bearer short' }), 401, 'INVALID_API_KEY');
        expectError(await send(t, route, { Authorization: `Basic ${ADMIN_TOKEN}` }), 401, 'INVALID_API_KEY');
      }
    });

    it('never lets a customer API key in (401 INVALID_API_KEY)', async () => {
      for (const route of routes()) expectError(await send(t, route, customer.auth), 401, 'INVALID_API_KEY', /customer API key/);
    });

    it('answers 404 NOT_FOUND on every route when ADMIN_TOKEN is unset, even with a token', async () => {
      for (const route of routes()) {
        expectError(await send(off, route, ADMIN), 404, 'NOT_FOUND', `No route ${route.method.toUpperCase()} ${route.path}.`);
        expectError(await send(off, route, {}), 404, 'NOT_FOUND');
      }
    });

    it('changed nothing while refusing', async () => {
      const account = await t.admin.getAccount(customer.id);
      expect(account).toMatchObject({ balance: 100, disabled: false, keys: [{ status: 'active' }] });
      const res = await request(t.http).get('/api/v1/balance').set(customer.auth);
      expect(res.status).toBe(200);
    });
  });

  describe('POST /admin/v1/accounts', () => {
    it('creates an account with its first key, which authenticates at once', async () => {
      const res = await request(t.http).post('/admin/v1/accounts').set(ADMIN).send({ name: 'Acme Ltd', plan: 'standard', credits: 250 });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ id: expect.any(String), name: 'Acme Ltd', plan: 'standard', balance: 250, api_key: expect.stringMatching(/^pf_live_[0-9A-Za-z]{32}$/) });
      const balance = await request(t.http).get('/api/v1/balance').set({ Authorization: `Bearer ${res.body.api_key}` });
      expect(balance.body).toEqual({ balance: 250 });
      expect(await ledgerSum(t, res.body.id)).toBe(250);
    });

    it('defaults to the free plan and 0 credits, without a ledger row', async () => {
      const res = await request(t.http).post('/admin/v1/accounts').set(ADMIN).send({ name: 'Bare' });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ plan: 'free', balance: 0 });
      const rows: unknown[] = await t.db.query(`SELECT 1 FROM ledger_entries WHERE account_id = $1`, [res.body.id]);
      expect(rows).toHaveLength(0);
    });

    it.each([
      [{}, /name/],
      [{ name: '' }, /name/],
      [{ name: '   ' }, /name must not be blank/],
      [{ name: 42 }, /name must be a string/],
      [{ name: 'x'.repeat(201) }, /name must be shorter than or equal to 200/],
      [{ name: 'A', credits: -1 }, /credits must not be less than 0/],
      [{ name: 'A', credits: '10' }, /credits must be an integer/],
      [{ name: 'A', credits: 1.5 }, /credits must be an integer/],
      [{ name: 'A', plan: 'platinum' }, /plan must be one of .*\bfree\b.*\benterprise\b/],
      [{ name: 'A', plan: 7 }, /plan must be a string/],
      [{ name: 'A', owner: 'me' }, /unknown field "owner"/],
    ])('refuses %j with 400 naming the field', async (body, message) => {
      expectError(await request(t.http).post('/admin/v1/accounts').set(ADMIN).send(body), 400, 'INVALID_REQUEST', message);
    });

    it('refuses malformed JSON and a non-JSON body with 400', async () => {
      const broken = await request(t.http).post('/admin/v1/accounts').set(ADMIN).set('Content-Type', 'application/json').send('{"name":');
      expectError(broken, 400, 'INVALID_REQUEST', /not valid JSON/);
      const text = await request(t.http).post('/admin/v1/accounts').set(ADMIN).set('Content-Type', 'text/plain').send('name=A');
      expectError(text, 400, 'INVALID_REQUEST', /Content-Type/);
    });
  });

  describe('GET /admin/v1/accounts/{id}', () => {
    it('shows balance, plan, state, settings and keys, never key material', async () => {
      const account = await createAccount(t, { credits: 42, plan: 'standard' });
      const used = await request(t.http).get('/api/v1/balance').set(account.auth);
      expect(used.status).toBe(200);
      const second = await t.admin.issueKey(account.id, 'test');
      // last_used_at is written off the request path: wait for it to show, not for a set time.
      const res = await eventually(
        () => request(t.http).get(`/admin/v1/accounts/${account.id}`).set(ADMIN),
        (answer) => Boolean(answer.body.keys?.[0]?.last_used_at),
        30_000,
      );
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: account.id,
        name: expect.any(String),
        plan: 'standard',
        balance: 42,
        disabled: false,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
        settings: {
          checks: { network_status: true, line_type: false, portability: false, sim_swap: false },
          daily_credit_limit: null,
          low_balance_threshold: null,
          webhook_url: null,
          check_options: { sim_swap: { window_hours: 168 } },
        },
        keys: [
          { id: expect.any(String), prefix: account.apiKey.slice(0, 12), status: 'active', created_at: expect.any(String), last_used_at: expect.any(String) },
          { id: second.id, prefix: second.prefix, status: 'active', created_at: expect.any(String), last_used_at: null },
        ],
      });
      const raw = JSON.stringify(res.body);
      expect(raw).not.toContain(account.apiKey);
      expect(raw).not.toContain(second.apiKey);
      expect(raw).not.toMatch(/hash/);
    });

    it.each([UNKNOWN_UUID, 'not-a-uuid', '1', "'; DROP TABLE accounts; --", 'ABCDEFGH-0000-4000-8000-000000000000'])(
      'answers 404 NOT_FOUND for the unknown id %p',
      async (id) => {
        expectError(await request(t.http).get(`/admin/v1/accounts/${encodeURIComponent(id)}`).set(ADMIN), 404, 'NOT_FOUND');
      },
    );
  });

  describe('PATCH /admin/v1/accounts/{id}', () => {
    it('changes the plan and answers the whole account', async () => {
      const account = await createAccount(t, { plan: 'free' });
      const res = await request(t.http).patch(`/admin/v1/accounts/${account.id}`).set(ADMIN).send({ plan: 'enterprise' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: account.id, plan: 'enterprise', disabled: false, keys: [{ status: 'active' }] });
      const owner = await t.app.get(ApiKeysService).authenticate(account.auth.Authorization);
      expect(owner.plan).toMatchObject({ name: 'enterprise', limit: 1000 });
    });

    it('disabling makes every key of the account 401 REVOKED_API_KEY at once; enabling lets them in again', async () => {
      const account = await createAccount(t);
      const other = await t.admin.issueKey(account.id, 'test');
      const otherAuth = { Authorization: `Bearer ${other.apiKey}` };
      expect((await request(t.http).get('/api/v1/balance').set(account.auth)).status).toBe(200); // cached now

      const disabled = await request(t.http).patch(`/admin/v1/accounts/${account.id}`).set(ADMIN).send({ disabled: true });
      expect(disabled.status).toBe(200);
      expect(disabled.body.disabled).toBe(true);
      expectError(await request(t.http).get('/api/v1/balance').set(account.auth), 401, 'REVOKED_API_KEY', /disabled/);
      expectError(await request(t.http).get('/api/v1/balance').set(otherAuth), 401, 'REVOKED_API_KEY', /disabled/);

      const enabled = await request(t.http).patch(`/admin/v1/accounts/${account.id}`).set(ADMIN).send({ disabled: false });
      expect(enabled.body.disabled).toBe(false);
      expect((await request(t.http).get('/api/v1/balance').set(account.auth)).status).toBe(200);
      expect((await request(t.http).get('/api/v1/balance').set(otherAuth)).status).toBe(200);
    });

    it.each([
      [{}, /at least one of plan, disabled/],
      [{ disabled: 'yes' }, /disabled must be a boolean/],
      [{ disabled: null }, /disabled must be a boolean/],
      [{ plan: 'platinum' }, /plan must be one of/],
      [{ plan: 'free', name: 'renamed' }, /unknown field "name"/],
    ])('refuses %j with 400 naming the field, changing nothing', async (body, message) => {
      const account = await createAccount(t, { plan: 'standard' });
      expectError(await request(t.http).patch(`/admin/v1/accounts/${account.id}`).set(ADMIN).send(body), 400, 'INVALID_REQUEST', message);
      expect(await t.admin.getAccount(account.id)).toMatchObject({ plan: 'standard', disabled: false });
    });

    it('answers 404 for an unknown or malformed id', async () => {
      expectError(await request(t.http).patch(`/admin/v1/accounts/${UNKNOWN_UUID}`).set(ADMIN).send({ disabled: true }), 404, 'NOT_FOUND');
      expectError(await request(t.http).patch('/admin/v1/accounts/nope').set(ADMIN).send({ disabled: true }), 404, 'NOT_FOUND');
    });
  });

  describe('POST /admin/v1/accounts/{id}/credits', () => {
    const credits = (id: string, body: object) => request(t.http).post(`/admin/v1/accounts/${id}/credits`).set(ADMIN).send(body);

    it('leaves no top-up behind when its audit row cannot be written (the action and its audit row commit together)', async () => {
      const account = await createAccount(t, { credits: 100 });
      const name = `pf_test_refuse_audit_${account.id.replace(/-/g, '')}`;
      await t.db.query(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'simulated audit failure'; END $$`);
      await t.db.query(`CREATE TRIGGER ${name} BEFORE INSERT ON admin_audit FOR EACH ROW WHEN (NEW.target_id = '${account.id}') EXECUTE FUNCTION ${name}()`);
      try {
        const topUp = await credits(account.id, { amount: 50, reason: 'invoice 18' });
        expect(topUp.status).toBe(500);
        expect(await ledgerSum(t, account.id)).toBe(100);
        const [{ balance }] = await t.db.query(`SELECT balance FROM accounts WHERE id = $1`, [account.id]);
        expect(Number(balance)).toBe(100);
      } finally {
        await t.db.query(`DROP TRIGGER ${name} ON admin_audit`);
        await t.db.query(`DROP FUNCTION ${name}()`);
      }
      const retried = await credits(account.id, { amount: 50, reason: 'invoice 18' });
      expect(retried.body).toEqual({ balance: 150 });
      expect(await ledgerSum(t, account.id)).toBe(150);
    });

    it('tops up and adjusts by exactly the amount, one ledger row each, balance = ledger sum', async () => {
      const account = await createAccount(t, { credits: 100 });
      const topUp = await credits(account.id, { amount: 250, reason: 'invoice 17' });
      expect(topUp.status).toBe(200);
      expect(topUp.body).toEqual({ balance: 350 });
      const adjust = await credits(account.id, { amount: -75, reason: 'duplicate top-up' });
      expect(adjust.status).toBe(200);
      expect(adjust.body).toEqual({ balance: 275 });

      expect((await request(t.http).get('/api/v1/balance').set(account.auth)).body).toEqual({ balance: 275 });
      expect(await balanceOf(t, account.id)).toBe(275);
      expect(await ledgerSum(t, account.id)).toBe(275);
      const rows: Array<Record<string, string>> = await t.db.query(
        `SELECT type, amount::int AS amount, balance_after::int AS balance_after, reason, actor FROM ledger_entries WHERE account_id = $1 ORDER BY id`,
        [account.id],
      );
      expect(rows.slice(1)).toEqual([
        { type: 'TOPUP', amount: 250, balance_after: 350, reason: 'invoice 17', actor: `admin-api:${topUp.headers['x-request-id']}` },
        { type: 'ADJUSTMENT', amount: -75, balance_after: 275, reason: 'duplicate top-up', actor: `admin-api:${adjust.headers['x-request-id']}` },
      ]);
    });

    it('adjusts down to exactly zero', async () => {
      const account = await createAccount(t, { credits: 30 });
      expect((await credits(account.id, { amount: -30, reason: 'refund to card' })).body).toEqual({ balance: 0 });
      expect(await ledgerSum(t, account.id)).toBe(0);
    });

    it('refuses an adjustment below zero with 400 and changes nothing (no ledger row, no audit row)', async () => {
      const account = await createAccount(t, { credits: 30 });
      const auditBefore = (await auditFor(t, account.id)).length;
      expectError(await credits(account.id, { amount: -31, reason: 'too much' }), 400, 'INVALID_REQUEST', /below zero/);
      expect(await balanceOf(t, account.id)).toBe(30);
      expect(await ledgerSum(t, account.id)).toBe(30);
      const rows: unknown[] = await t.db.query(`SELECT 1 FROM ledger_entries WHERE account_id = $1`, [account.id]);
      expect(rows).toHaveLength(1);
      expect(await auditFor(t, account.id)).toHaveLength(auditBefore);
    });

    it.each([
      [{ amount: 0, reason: 'x' }, /amount must not be 0/],
      [{ amount: 1.5, reason: 'x' }, /amount must be an integer/],
      [{ amount: '10', reason: 'x' }, /amount must be an integer/],
      [{ amount: 1e13, reason: 'x' }, /amount must not be greater than/],
      [{ reason: 'x' }, /amount/],
      [{ amount: 10 }, /reason/],
      [{ amount: 10, reason: ' ' }, /reason must not be blank/],
      [{ amount: 10, reason: 'x'.repeat(501) }, /reason must be shorter than or equal to 500/],
      [{ amount: 10, reason: 'x', type: 'TOPUP' }, /unknown field "type"/],
    ])('refuses %j with 400 naming the field', async (body, message) => {
      const account = await createAccount(t, { credits: 10 });
      expectError(await credits(account.id, body), 400, 'INVALID_REQUEST', message);
      expect(await balanceOf(t, account.id)).toBe(10);
    });

    it('answers 404 for an unknown or malformed account id', async () => {
      expectError(await credits(UNKNOWN_UUID, { amount: 5, reason: 'x' }), 404, 'NOT_FOUND');
      expectError(await credits('42', { amount: 5, reason: 'x' }), 404, 'NOT_FOUND');
    });
  });

  describe('keys', () => {
    it('POST /accounts/{id}/keys issues another working key, shown once', async () => {
      const account = await createAccount(t, { credits: 7 });
      const res = await request(t.http).post(`/admin/v1/accounts/${account.id}/keys`).set(ADMIN);
      expect(res.status).toBe(201);
      expect(res.body).toEqual({ id: expect.any(String), prefix: res.body.api_key.slice(0, 12), api_key: expect.stringMatching(/^pf_live_[0-9A-Za-z]{32}$/) });
      const balance = await request(t.http).get('/api/v1/balance').set({ Authorization: `Bearer ${res.body.api_key}` });
      expect(balance.body).toEqual({ balance: 7 });
      const stored: Array<Record<string, string>> = await t.db.query(`SELECT * FROM api_keys WHERE id = $1`, [res.body.id]);
      expect(JSON.stringify(stored)).not.toContain(res.body.api_key);
    });

    it('POST /accounts/{id}/keys answers 404 for an unknown or malformed account and refuses a body field', async () => {
      expectError(await request(t.http).post(`/admin/v1/accounts/${UNKNOWN_UUID}/keys`).set(ADMIN), 404, 'NOT_FOUND');
      expectError(await request(t.http).post('/admin/v1/accounts/zzz/keys').set(ADMIN), 404, 'NOT_FOUND');
    });

    it('revoke: the very next call with that key gets 401 REVOKED_API_KEY; the other keys keep working', async () => {
      const account = await createAccount(t, { credits: 9 });
      const other = await t.admin.issueKey(account.id, 'test');
      const [first] = (await t.admin.getAccount(account.id)).keys;
      expect((await request(t.http).get('/api/v1/balance').set(account.auth)).status).toBe(200); // in the auth cache now

      const res = await request(t.http).post(`/admin/v1/keys/${first.id}/revoke`).set(ADMIN);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ id: first.id, status: 'revoked' });

      expectError(await request(t.http).get('/api/v1/balance').set(account.auth), 401, 'REVOKED_API_KEY', /revoked/);
      const stillWorks = await request(t.http).get('/api/v1/balance').set({ Authorization: `Bearer ${other.apiKey}` });
      expect(stillWorks.status).toBe(200);
      expect(stillWorks.body).toEqual({ balance: 9 });

      const again = await request(t.http).post(`/admin/v1/keys/${first.id}/revoke`).set(ADMIN);
      expect(again.body).toEqual({ id: first.id, status: 'revoked' });
      const shown = await t.admin.getAccount(account.id);
      expect(shown.keys.map((key) => key.status)).toEqual(['revoked', 'active']);
    });

    it('revoke: a call made while the revocation is not committed yet leaves nothing cached, so the next call after it is 401', async () => {
      const account = await createAccount(t, { credits: 9 });
      const [key] = (await t.admin.getAccount(account.id)).keys;
      // Holds the revocation's transaction open after its UPDATE of the key, at its audit row's INSERT.
      const holder = t.db.createQueryRunner();
      await holder.connect();
      let released = false;
      try {
        await holder.startTransaction();
        await holder.query(`LOCK TABLE admin_audit IN EXCLUSIVE MODE`);
        const revoking = request(t.http).post(`/admin/v1/keys/${key.id}/revoke`).set(ADMIN).then((res) => res);
        const waiting = await eventually(
          (): Promise<unknown[]> =>
            t.db.query(
              `SELECT 1 FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock' AND query LIKE '%INSERT INTO admin_audit%'`,
            ),
          (rows) => rows.length > 0,
          15_000,
        );
        expect(waiting).toHaveLength(1);
        // Meanwhile the key is still active (read through another connection): the call is served.
        expect((await request(t.http).get('/api/v1/balance').set(account.auth)).status).toBe(200);
        await holder.commitTransaction();
        released = true;
        expect((await revoking).body).toEqual({ id: key.id, status: 'revoked' });
      } finally {
        if (!released) await holder.rollbackTransaction();
        await holder.release();
      }
      expectError(await request(t.http).get('/api/v1/balance').set(account.auth), 401, 'REVOKED_API_KEY', /revoked/);
    });

    it('revoke answers 404 for an unknown or malformed key id', async () => {
      expectError(await request(t.http).post(`/admin/v1/keys/${UNKNOWN_UUID}/revoke`).set(ADMIN), 404, 'NOT_FOUND', /No API key/);
      expectError(await request(t.http).post('/admin/v1/keys/pf_live_x/revoke').set(ADMIN), 404, 'NOT_FOUND');
    });
  });

  describe('plans', () => {
    it('GET /plans lists the seeded plans with their limits', async () => {
      const res = await request(t.http).get('/admin/v1/plans').set(ADMIN);
      expect(res.status).toBe(200);
      expect(res.body.plans).toEqual(
        expect.arrayContaining([
          { name: 'free', limit: 5, window_seconds: 1, max_watched_numbers: 10_000 },
          { name: 'standard', limit: 50, window_seconds: 1, max_watched_numbers: 10_000 },
          { name: 'enterprise', limit: 1000, window_seconds: 1, max_watched_numbers: 10_000 },
        ]),
      );
    });

    it('PUT /plans/{name} changes limit and window, applied to the next request of an account on it', async () => {
      const plan = await createTestPlan(t, 7, 1);
      const account = await createAccount(t, { plan });
      const keys = t.app.get(ApiKeysService);
      expect((await keys.authenticate(account.auth.Authorization)).plan).toEqual({ name: plan, limit: 7, windowSeconds: 1 });

      const res = await request(t.http).put(`/admin/v1/plans/${plan}`).set(ADMIN).send({ limit: 30, window_seconds: 60 });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ name: plan, limit: 30, window_seconds: 60, max_watched_numbers: 10_000 });
      expect((await keys.authenticate(account.auth.Authorization)).plan).toEqual({ name: plan, limit: 30, windowSeconds: 60 });
      expect((await request(t.http).get('/admin/v1/plans').set(ADMIN)).body.plans).toContainEqual({ name: plan, limit: 30, window_seconds: 60, max_watched_numbers: 10_000 });
      const watched = await request(t.http).put(`/admin/v1/plans/${plan}`).set(ADMIN).send({ limit: 30, window_seconds: 60, max_watched_numbers: 25_000 });
      expect(watched.body).toEqual({ name: plan, limit: 30, window_seconds: 60, max_watched_numbers: 25_000 });
    });

    it.each([
      [{ limit: 0, window_seconds: 1 }, /limit must not be less than 1/],
      [{ limit: 5 }, /window_seconds/],
      [{ limit: '5', window_seconds: 1 }, /limit must be an integer/],
      [{ limit: 5, window_seconds: 86401 }, /window_seconds must not be greater than 86400/],
      [{ limit: 5, window_seconds: 1, burst: 2 }, /unknown field "burst"/],
    ])('PUT refuses %j with 400 naming the field', async (body, message) => {
      const plan = await createTestPlan(t);
      expectError(await request(t.http).put(`/admin/v1/plans/${plan}`).set(ADMIN).send(body), 400, 'INVALID_REQUEST', message);
    });

    it('PUT answers 404 for an unknown plan', async () => {
      expectError(await request(t.http).put('/admin/v1/plans/platinum').set(ADMIN).send({ limit: 5, window_seconds: 1 }), 404, 'NOT_FOUND', /platinum/);
    });
  });

  describe('GET /admin/v1/audit', () => {
    it('records every action with actor, request id and before/after, newest first', async () => {
      const created = await request(t.http).post('/admin/v1/accounts').set(ADMIN).set('X-Request-Id', 'audit-create-1').send({ name: 'Audited', credits: 10 });
      const id = created.body.id as string;
      await request(t.http).post(`/admin/v1/accounts/${id}/credits`).set(ADMIN).set('X-Request-Id', 'audit-topup-1').send({ amount: 5, reason: 'bonus' });
      await request(t.http).post(`/admin/v1/accounts/${id}/credits`).set(ADMIN).send({ amount: -3, reason: 'correction' });
      await request(t.http).patch(`/admin/v1/accounts/${id}`).set(ADMIN).send({ plan: 'standard', disabled: true });

      const entries = await auditFor(t, id);
      expect(entries.map((entry) => entry.action)).toEqual(['account.update', 'credits.adjust', 'credits.top_up', 'account.create']);
      const [update, adjust, topUp, create] = entries;
      expect(create).toMatchObject({
        actor: 'admin-api',
        target_type: 'account',
        target_id: id,
        request_id: 'audit-create-1',
        before: null,
        after: { name: 'Audited', plan: 'free', balance: 10, disabled: false, key: { id: expect.any(String), prefix: expect.any(String) } },
        created_at: expect.stringMatching(/Z$/),
      });
      expect(JSON.stringify(create)).not.toContain(created.body.api_key);
      expect(topUp).toMatchObject({ request_id: 'audit-topup-1', before: { balance: 10 }, after: { balance: 15, amount: 5, reason: 'bonus' } });
      expect(adjust).toMatchObject({ before: { balance: 15 }, after: { balance: 12, amount: -3, reason: 'correction' } });
      expect(update).toMatchObject({ before: { plan: 'free', disabled: false }, after: { plan: 'standard', disabled: true } });
    });

    it('records key issue and revoke against the key, and plan updates against the plan', async () => {
      const account = await createAccount(t);
      const issued = await request(t.http).post(`/admin/v1/accounts/${account.id}/keys`).set(ADMIN);
      await request(t.http).post(`/admin/v1/keys/${issued.body.id}/revoke`).set(ADMIN);
      const entries = await auditFor(t, issued.body.id);
      expect(entries).toMatchObject([
        { action: 'key.revoke', target_type: 'api_key', before: { status: 'active', account_id: account.id }, after: { status: 'revoked', account_id: account.id } },
        { action: 'key.issue', target_type: 'api_key', before: null, after: { status: 'active', account_id: account.id, prefix: issued.body.prefix } },
      ]);

      const plan = await createTestPlan(t, 3, 2);
      await request(t.http).put(`/admin/v1/plans/${plan}`).set(ADMIN).send({ limit: 4, window_seconds: 5 });
      expect(await auditFor(t, plan)).toMatchObject([
        { action: 'plan.update', target_type: 'plan', before: { name: plan, limit: 3, window_seconds: 2 }, after: { name: plan, limit: 4, window_seconds: 5 } },
      ]);
    });

    it('pages with limit and next_cursor, newest first, without gaps or repeats', async () => {
      const account = await createAccount(t, { credits: 1 });
      for (let i = 1; i <= 4; i++) await request(t.http).post(`/admin/v1/accounts/${account.id}/credits`).set(ADMIN).send({ amount: i, reason: `r${i}` });
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const res = await request(t.http).get('/admin/v1/audit').query({ target_id: account.id, limit: 2, ...(cursor ? { cursor } : {}) }).set(ADMIN);
        expect(res.status).toBe(200);
        expect(res.body.entries.length).toBeLessThanOrEqual(2);
        seen.push(...res.body.entries.map((entry: { after: { reason?: string }; action: string }) => entry.after.reason ?? entry.action));
        cursor = res.body.next_cursor ?? undefined;
        pages++;
      } while (cursor);
      expect(seen).toEqual(['r4', 'r3', 'r2', 'r1', 'account.create']);
      expect(pages).toBe(3);

      const all = await request(t.http).get('/admin/v1/audit').set(ADMIN);
      expect(all.body.entries.length).toBeGreaterThan(0);
      const ids = all.body.entries.map((entry: { id: string }) => Number(entry.id));
      expect(ids).toEqual([...ids].sort((a, b) => b - a));
    });

    it.each([
      [{ limit: 0 }, /limit must not be less than 1/],
      [{ limit: 201 }, /limit must not be greater than 200/],
      [{ limit: 'ten' }, /limit must be an integer/],
      [{ cursor: 'garbage' }, /cursor is not a cursor this API returned/],
      [{ page: 2 }, /unknown field "page"/],
    ])('refuses the query %j with 400 naming the parameter', async (query, message) => {
      expectError(await request(t.http).get('/admin/v1/audit').query(query).set(ADMIN), 400, 'INVALID_REQUEST', message);
    });
  });

  it('documents the admin routes in OpenAPI under their own tag and bearer scheme', async () => {
    const res = await request(t.http).get('/docs-json');
    const operation = res.body.paths['/admin/v1/accounts'].post;
    expect(operation.tags).toEqual(['admin']);
    expect(operation.security).toEqual([{ 'admin-token': [] }]);
    expect(Object.keys(res.body.paths).filter((path) => path.startsWith('/admin/v1')).sort()).toEqual([
      '/admin/v1/accounts',
      '/admin/v1/accounts/{id}',
      '/admin/v1/accounts/{id}/credits',
      '/admin/v1/accounts/{id}/keys',
      '/admin/v1/accounts/{id}/settings',
      '/admin/v1/accounts/{id}/usage',
      '/admin/v1/audit',
      '/admin/v1/erasures',
      '/admin/v1/keys/{id}/revoke',
      '/admin/v1/plans',
      '/admin/v1/plans/{name}',
    ]);
  });
});
