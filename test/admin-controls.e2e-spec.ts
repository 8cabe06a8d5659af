import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { cli, field } from './helpers/admin-cli';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

const ADMIN = { Authorization: 'Bearer test-admin-token-0123456789' };

describe('the admin side of the customer controls', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ ADMIN_TOKEN: 'test-admin-token-0123456789', PROVIDER: 'sandbox' })));
  afterAll(() => t.close());

  const admin = () => request(t.http);
  const audit = async (targetId: string) => (await admin().get('/admin/v1/audit').query({ target_id: targetId }).set(ADMIN).expect(200)).body.entries;

  describe('GET /admin/v1/accounts', () => {
    const tag = randomUUID().slice(0, 8);
    let accounts: TestAccount[];
    beforeAll(async () => {
      accounts = [];
      for (const [i, options] of [
        { credits: 100, plan: 'free' },
        { credits: 5000, plan: 'standard' },
        { credits: 20, plan: 'standard' },
        { credits: 0, plan: 'enterprise' },
      ].entries()) {
        accounts.push(await createAccount(t, { ...options, name: `Lister ${tag} ${i} ${i % 2 ? 'ACME' : 'Globex'}` }));
      }
      await t.admin.setDisabled(accounts[3].id, true, 'test');
    });
    const ids = (body: { accounts: Array<{ id: string }> }) => body.accounts.map((account) => account.id);

    it('lists accounts newest first, a page at a time with the keyset pager', async () => {
      const first = (await admin().get('/admin/v1/accounts').query({ name: tag, limit: 3 }).set(ADMIN).expect(200)).body;
      expect(ids(first)).toEqual([accounts[3].id, accounts[2].id, accounts[1].id]);
      expect(first.accounts[0]).toEqual({ id: accounts[3].id, name: `Lister ${tag} 3 ACME`, plan: 'enterprise', balance: 0, disabled: true, created_at: expect.any(String) });
      const second = (await admin().get('/admin/v1/accounts').query({ name: tag, limit: 3, cursor: first.next_cursor }).set(ADMIN).expect(200)).body;
      expect(second).toEqual({ accounts: [expect.objectContaining({ id: accounts[0].id })], next_cursor: null });
    });

    it.each([
      [{ name: 'acme' }, [3, 1]],
      [{ plan: 'standard' }, [2, 1]],
      [{ disabled: 'true' }, [3]],
      [{ disabled: 'false', balance_below: '101' }, [2, 0]],
      [{ balance_below: '20' }, [3]],
      [{ plan: 'standard', balance_below: '1000', name: 'AcMe' }, []],
    ])('filters by %j (the accounts of this test among the results, newest first)', async (filter, expected) => {
      const page = (await admin().get('/admin/v1/accounts').query({ ...filter, limit: 200 }).set(ADMIN).expect(200)).body;
      const ours = page.accounts.filter((account: { name: string }) => account.name.includes(tag)).map((account: { id: string }) => account.id);
      expect(ours).toEqual(expected.map((i) => accounts[i].id));
    });

    it.each([{ disabled: 'maybe' }, { balance_below: '-1' }, { limit: '0' }, { cursor: 'bogus' }, { colour: 'red' }])('refuses %j with 400', async (query) => {
      expectError(await admin().get('/admin/v1/accounts').query(query).set(ADMIN), 400, 'INVALID_REQUEST');
    });

    it('needs the admin token', async () => {
      expectError(await admin().get('/admin/v1/accounts'), 401, 'INVALID_API_KEY');
      expectError(await admin().get('/admin/v1/accounts').set(accounts[0].auth), 401, 'INVALID_API_KEY');
    });
  });

  describe('GET /admin/v1/accounts/{id}/usage', () => {
    it("answers the account's ledger exactly as the customer sees it", async () => {
      const account = await createAccount(t, { credits: 100 });
      await admin().post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected, source: 'web' }).expect(200);
      await admin().post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.failing }).expect(503);
      const customer = (await admin().get('/api/v1/usage').set(account.auth).expect(200)).body;
      const viaAdmin = (await admin().get(`/admin/v1/accounts/${account.id}/usage`).set(ADMIN).expect(200)).body;
      expect(viaAdmin).toEqual(customer);
      expect(viaAdmin.entries.map((entry: { type: string }) => entry.type)).toEqual(['REFUND', 'CHARGE', 'CHARGE', 'TOPUP']);
      const page = (await admin().get(`/admin/v1/accounts/${account.id}/usage`).query({ limit: 3 }).set(ADMIN).expect(200)).body;
      const rest = (await admin().get(`/admin/v1/accounts/${account.id}/usage`).query({ limit: 3, cursor: page.next_cursor }).set(ADMIN).expect(200)).body;
      expect([...page.entries, ...rest.entries]).toEqual(customer.entries);
      const state = await ledgerState(t.db, account.id);
      expect(state.ledgerSum).toBe(state.balance);
      expect(state.balance).toBe(96);
    });

    it('answers 404 for an unknown or malformed id', async () => {
      expectError(await admin().get('/admin/v1/accounts/00000000-0000-4000-8000-000000000000/usage').set(ADMIN), 404, 'NOT_FOUND');
      expectError(await admin().get('/admin/v1/accounts/nope/usage').set(ADMIN), 404, 'NOT_FOUND');
    });
  });

  describe('PATCH /admin/v1/accounts/{id}/settings', () => {
    it('sets the cap, threshold and webhook URL, which the customer sees, and records before and after in the audit trail', async () => {
      const account = await createAccount(t, { credits: 100 });
      const res = await admin()
        .patch(`/admin/v1/accounts/${account.id}/settings`)
        .set(ADMIN)
        .send({ daily_credit_limit: 40, low_balance_threshold: 10, webhook_url: 'https://example.com/hooks' })
        .expect(200);
      expect(res.body.settings).toEqual({
        checks: { network_status: true, line_type: false, portability: false, sim_swap: false },
        daily_credit_limit: 40,
        low_balance_threshold: 10,
        webhook_url: 'https://example.com/hooks',
        check_options: { sim_swap: { window_hours: 168 } },
      });
      expect((await admin().get('/api/v1/settings').set(account.auth).expect(200)).body).toMatchObject({ daily_credit_limit: 40, low_balance_threshold: 10 });
      await admin().patch(`/admin/v1/accounts/${account.id}/settings`).set(ADMIN).send({ daily_credit_limit: null }).expect(200);
      const entries = await audit(account.id);
      expect(entries.slice(0, 2)).toEqual([
        expect.objectContaining({ actor: 'admin-api', action: 'settings.update', before: { daily_credit_limit: 40 }, after: { daily_credit_limit: null } }),
        expect.objectContaining({
          action: 'settings.update',
          before: { daily_credit_limit: null, low_balance_threshold: null, webhook_url: null },
          after: { daily_credit_limit: 40, low_balance_threshold: 10, webhook_url: 'https://example.com/hooks' },
          request_id: expect.any(String),
        }),
      ]);
    });

    it.each([
      [{}, /Send at least one of daily_credit_limit, low_balance_threshold, webhook_url/],
      [{ daily_credit_limit: -5 }, /daily_credit_limit must not be less than 0/],
      [{ checks: { line_type: true } }, /unknown field "checks"/],
      [{ webhook_url: 'http://10.0.0.1/x' }, /webhook_url must point to a public address/],
    ])('refuses %j with 400 and records nothing', async (body, message) => {
      const account = await createAccount(t, { credits: 100 });
      const res = await admin().patch(`/admin/v1/accounts/${account.id}/settings`).set(ADMIN).send(body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(message);
      expect((await audit(account.id)).map((entry: { action: string }) => entry.action)).toEqual(['account.create']);
    });

    it('answers 404 for an unknown account', async () => {
      expectError(await admin().patch('/admin/v1/accounts/00000000-0000-4000-8000-000000000000/settings').set(ADMIN).send({ daily_credit_limit: 1 }), 404, 'NOT_FOUND');
    });
  });

  describe('the CLI', () => {
    it('set-controls, show-account, list-accounts and usage, in the audit trail as the CLI user', async () => {
      const account = await createAccount(t, { credits: 100, name: `CLI ${randomUUID()}` });
      const set = await cli('set-controls', account.id, '--daily-credit-limit', '500', '--low-balance-threshold', 'none', '--webhook-url', 'https://example.com/cli');
      expect(set.code).toBe(0);
      expect(field(set.stdout, 'daily_credit_limit')).toBe('500');
      expect(field(set.stdout, 'low_balance_threshold')).toBe('none');
      expect(field(set.stdout, 'webhook_url')).toBe('https://example.com/cli');
      const shown = JSON.parse((await cli('show-account', account.id, '--json')).stdout);
      expect(shown.settings).toMatchObject({ daily_credit_limit: 500, low_balance_threshold: null, webhook_url: 'https://example.com/cli' });
      const [entry] = await audit(account.id);
      expect(entry).toMatchObject({ actor: `cli:${userInfo().username}`, action: 'settings.update', after: { daily_credit_limit: 500, low_balance_threshold: null, webhook_url: 'https://example.com/cli' } });

      const listed = JSON.parse((await cli('list-accounts', '--name', 'cli ', '--balance-below', '101', '--limit', '200', '--json')).stdout);
      expect(listed.accounts.map((a: { id: string }) => a.id)).toContain(account.id);
      const usage = await cli('usage', account.id, '--json');
      expect(JSON.parse(usage.stdout)).toEqual((await admin().get('/api/v1/usage').set(account.auth).expect(200)).body);
    }, 60_000);

    it('refuses bad arguments with exit code 2 before touching the database', async () => {
      const runs = await Promise.all([
        cli('set-controls', randomUUID()),
        cli('set-controls', randomUUID(), '--daily-credit-limit', '-3'),
        cli('list-accounts', '--disabled', 'maybe'),
      ]);
      expect(runs.map((run) => run.code)).toEqual([2, 2, 2]);
      expect(runs[0].stderr).toMatch(/at least one of --daily-credit-limit/);
    }, 60_000);

    it('fails with exit code 1 for a webhook URL at a private address', async () => {
      const account = await createAccount(t, { credits: 1 });
      const run = await cli('set-controls', account.id, '--webhook-url', 'http://127.0.0.1/x');
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/webhook_url must point to a public address/);
    }, 60_000);
  });
});
