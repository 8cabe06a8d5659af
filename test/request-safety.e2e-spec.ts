import { Logger } from '@nestjs/common';
import type { Express } from 'express';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import request from 'supertest';
import { SettingsService } from '../src/settings/settings.service';
import { createAccount } from './factories/accounts';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * One test per finding of the outside security review (docs: README "Security"): each failed on the
 * code before the fix. Row 2 (access-log contents) is in logging.e2e-spec.ts, row 8 (the proxy) in
 * src/architecture/deploy-config.spec.ts; the classes behind each row are swept for every route in fuzz.e2e-spec.ts.
 */
const ADMIN_TOKEN = 'security-review-admin-token-0123';
const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
const IP_LIMIT = 5;

async function startBehindProxy(env: Record<string, string | undefined> = {}): Promise<TestApp> {
  const t = await startTestApp({ ADMIN_TOKEN, IP_RATE_LIMIT: String(IP_LIMIT), IP_RATE_WINDOW_SECONDS: '5', ...env });
  // The tests speak from other client addresses (X-Forwarded-For), as behind a load balancer.
  (t.app.getHttpAdapter().getInstance() as Express).set('trust proxy', true);
  return t;
}

describe('request safety: admin token limits, undecodable bodies, callback addresses, control characters, prototype keys, secrets', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startBehindProxy()));
  afterAll(() => t?.close());

  describe('row 1: wrong admin tokens count against the failed-authentication limit', () => {
    it('refuses an address with 429 after the limit, and counts and logs it without the guess', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn');
      const guess = 'wrong-admin-token-guess-9f8e7d6c';
      try {
        const statuses: number[] = [];
        for (let i = 0; i < IP_LIMIT + 5; i++) {
          const res = await request(t.http).get('/admin/v1/plans').set('Authorization', `Bearer ${guess}`).set('X-Forwarded-For', '203.0.113.11');
          statuses.push(res.status);
        }
        expect(statuses).toEqual([...Array(IP_LIMIT).fill(401), ...Array(5).fill(429)]);
        const refused = await request(t.http).get('/admin/v1/plans').set('Authorization', `Bearer ${guess}`).set('X-Forwarded-For', '203.0.113.11');
        expectError(refused, 429, 'RATE_LIMITED');
        expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
        // The right token is still served from that address (issue 24 #13: no lock-out).
        expect((await request(t.http).get('/admin/v1/plans').set(admin).set('X-Forwarded-For', '203.0.113.11')).status).toBe(200);
        // Another address is not affected.
        expect((await request(t.http).get('/admin/v1/plans').set(admin).set('X-Forwarded-For', '198.51.100.11')).status).toBe(200);

        const metrics = (await request(t.http).get('/metrics').expect(200)).text;
        expect(metrics).toMatch(/phone_filter_failed_auth_refused_total\{credential="admin_token"\} 6/);
        const lines = warn.mock.calls.map((call) => String(call[0])).filter((line) => line.includes('failed-authentication limit'));
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/address 203\.0\.113\.11 .*admin token/);
        expect(JSON.stringify(warn.mock.calls)).not.toContain(guess);
      } finally {
        warn.mockRestore();
      }
    });

    it('counts each kind of credential apart: wrong API keys cannot lock the admin out, nor wrong admin tokens the customers', async () => {
      // The contract limits requests without a valid key; customer-key failures and admin-token failures are separate counts.
      const from = '203.0.113.12';
      const account = await createAccount(t, { plan: 'enterprise', credits: 0 });
      const wrongKey = () => request(t.http).get('/api/v1/balance').set('Authorization', 'Bearer pf_live_guessguessguessguessguessguess56').set('X-Forwarded-For', from);
      const wrongToken = () => request(t.http).get('/admin/v1/plans').set('Authorization', 'Bearer not-the-admin-token-at-all').set('X-Forwarded-For', from);
      for (let i = 0; i < IP_LIMIT; i++) expect((await wrongKey()).status).toBe(401);
      expect((await wrongKey()).status).toBe(429);

      expect((await request(t.http).get('/admin/v1/plans').set(admin).set('X-Forwarded-For', from)).status).toBe(200);
      for (let i = 0; i < IP_LIMIT; i++) expect((await wrongToken()).status).toBe(401);
      expect((await wrongToken()).status).toBe(429);

      // A valid API key from the same address is verified and served: it is not a request without a valid key.
      expect((await request(t.http).get('/api/v1/balance').set(account.auth).set('X-Forwarded-For', from)).status).toBe(200);
    });

    it('holds under concurrency: a burst of wrong admin tokens gets 401 at most the limit times, and the right token late in it is served', async () => {
      const shared = { REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379', RATE_LIMIT_REDIS_PREFIX: `pf:test:${randomBytes(6).toString('hex')}:rl:` };
      for (const env of [{ REDIS_URL: undefined }, shared]) {
        // One window for the whole burst, however slow the machine: every one of the 400 is verified now.
        const instance = await startBehindProxy({ ...env, IP_RATE_WINDOW_SECONDS: '120' });
        try {
          // Listening like a deployed instance, so the burst arrives on concurrent connections.
          await instance.app.listen(0, '127.0.0.1');
          const url = `http://127.0.0.1:${(instance.http.address() as { port: number }).port}`;
          const from = '203.0.113.14';
          const send = (i: number) =>
            request(url)
              .get('/admin/v1/plans')
              .set('Authorization', i === 300 ? `Bearer ${ADMIN_TOKEN}` : `Bearer wrong-admin-token-${i}`)
              .set('X-Forwarded-For', from);
          const responses = await Promise.all(Array.from({ length: 400 }, (_, i) => send(i)));
          const verifiedWrong = responses.filter((res) => res.status === 401).length;
          expect(verifiedWrong).toBe(IP_LIMIT);
          expect(responses.filter((res) => res.status === 429)).toHaveLength(399 - verifiedWrong);
          expect(responses[300].status).toBe(200);
        } finally {
          await instance.close();
        }
      }
    });

    it('is one count for every instance sharing a Redis', async () => {
      const shared = { REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379', RATE_LIMIT_REDIS_PREFIX: `pf:test:${randomBytes(6).toString('hex')}:rl:` };
      const first = await startBehindProxy(shared);
      const second = await startBehindProxy(shared);
      try {
        const statuses: number[] = [];
        for (let i = 0; i < IP_LIMIT + 2; i++) {
          const instance = i % 2 ? second : first;
          statuses.push((await request(instance.http).get('/admin/v1/plans').set('Authorization', 'Bearer guess-guess-guess-guess').set('X-Forwarded-For', '203.0.113.13')).status);
        }
        expect(statuses).toEqual([...Array(IP_LIMIT).fill(401), 429, 429]);
      } finally {
        await first.close();
        await second.close();
      }
    });
  });

  describe('row 3: a body that cannot be decoded is a 400, not a 500', () => {
    it.each(['gzip', 'br', 'deflate'])('Content-Encoding: %s with a body that is not in it', async (encoding) => {
      const account = await createAccount(t, { credits: 100 });
      const customer = await request(t.http).post('/api/v1/filter').set(account.auth).set('Content-Type', 'application/json').set('Content-Encoding', encoding).send('notgzip');
      expectError(customer, 400, 'INVALID_REQUEST');
      const adminCall = await request(t.http).post('/admin/v1/accounts').set(admin).set('Content-Type', 'application/json').set('Content-Encoding', encoding).send('notgzip');
      expectError(adminCall, 400, 'INVALID_REQUEST');
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100 });
    });
  });

  describe('row 3, the class: every error type of the body parser, on a customer and an admin route', () => {
    const gzipped = (text: string) => gzipSync(Buffer.from(text));
    it.each([
      ['encoding.unsupported', { 'Content-Encoding': 'compress' }, '{}', 400, /Unsupported Content-Encoding/],
      ['charset.unsupported', { 'Content-Type': 'application/json; charset=latin-9' }, '{}', 400, /charset/],
      ['entity.too.large', {}, JSON.stringify({ phone: 'x'.repeat(1024 * 1024) }), 413, /1 MiB/],
      ['entity.too.large, once inflated', { 'Content-Encoding': 'gzip' }, gzipped(JSON.stringify({ phone: 'x'.repeat(2 * 1024 * 1024) })), 413, /1 MiB/],
      ['entity.parse.failed', {}, '{"phone":', 400, /not valid JSON/],
      ['entity.parse.failed, once inflated', { 'Content-Encoding': 'gzip' }, gzipped('{"phone":'), 400, /not valid JSON/],
      ['a gzip body that is not gzip', { 'Content-Encoding': 'gzip' }, 'notgzip', 400, /could not be decoded/],
      ['a deflate body that is not deflate', { 'Content-Encoding': 'deflate' }, 'notdeflate', 400, /could not be decoded/],
      ['a br body that is not br', { 'Content-Encoding': 'br' }, Buffer.from([0xff, 0xff, 0xff, 0xff]), 400, /could not be decoded/],
      ['a gzip body cut short', { 'Content-Encoding': 'gzip' }, gzipped('{"phone":"+447400123456"}').subarray(0, 12), 400, /could not be decoded/],
    ])('%s', async (_type, headers, body, status, message) => {
      const account = await createAccount(t, { credits: 100 });
      for (const [path, auth] of [['/api/v1/filter', account.auth], ['/admin/v1/accounts', admin]] as const) {
        // serialize: the bytes as given (superagent would otherwise JSON-encode a Buffer).
        const res = await request(t.http).post(path).set(auth).set({ 'Content-Type': 'application/json', ...headers }).serialize((raw: unknown) => raw as string).send(body);
        expectError(res, status, status === 413 ? 'PAYLOAD_TOO_LARGE' : 'INVALID_REQUEST');
        expect(res.body.error.message).toMatch(message);
      }
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100 });
    });

    it('still reads a well-formed gzip body', async () => {
      const account = await createAccount(t, { credits: 100 });
      const res = await request(t.http)
        .post('/api/v1/filter')
        .set(account.auth)
        .set({ 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' })
        .serialize((raw: unknown) => raw as string)
        .send(gzipped(`{"phone":"${TEST_NUMBERS.connected}"}`));
      expect(res.status).toBe(200);
    });
  });

  describe('rows 4 and 7: callback_url is global unicast only, whatever its spelling', () => {
    it.each([
      'http://[fe80::1%25eth0]/',
      'http://[::127.0.0.1]/',
      'http://[::ffff:0:127.0.0.1]/',
      'http://[64:ff9b:1::7f00:1]/',
      'http://[2002:7f00:1::]/',
    ])('refuses %s with 400 and charges nothing', async (url) => {
      const account = await createAccount(t, { credits: 100 });
      const res = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: [TEST_NUMBERS.connected], callback_url: url });
      expectError(res, 400, 'INVALID_REQUEST');
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100, byType: { TOPUP: 1 } });
    });
  });

  describe('row 5: NUL and other control characters are a 400 naming the field, before the database', () => {
    it.each([
      ['a customer body', (a: string) => request(t.http).post('/api/v1/filter/bulk').set({ Authorization: `Bearer ${a}` }).send({ phones: [TEST_NUMBERS.connected], callback_url: 'https://example.com/\u0000' }), /callback_url/],
      ['an admin name', () => request(t.http).post('/admin/v1/accounts').set(admin).send({ name: 'Acme\u0000' }), /name/],
      ['an admin reason', (_a: string, id: string) => request(t.http).post(`/admin/v1/accounts/${id}/credits`).set(admin).send({ amount: 1, reason: 'x\u0007y' }), /reason/],
      ['a path parameter', () => request(t.http).put('/admin/v1/plans/%00').set(admin).send({ limit: 1, window_seconds: 1 }), /name/],
      ['a query parameter', () => request(t.http).get('/admin/v1/audit?target_id=%00').set(admin), /target_id/],
    ])('in %s', async (_name, send, field) => {
      const account = await createAccount(t, { credits: 100 });
      const res = await send(account.apiKey, account.id);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(field);
      expect(res.body.error.message).toMatch(/control character/);
    });
  });

  describe('follow-up: a lone surrogate is a 400 naming the field, so no admin action goes unaudited', () => {
    it.each([
      ['an admin name', () => request(t.http).post('/admin/v1/accounts').set(admin).send({ name: 'evil\ud800' }), /name/],
      ['an admin reason', (id: string) => request(t.http).post(`/admin/v1/accounts/${id}/credits`).set(admin).send({ amount: 1, reason: '\udc00x' }), /reason/],
    ])('in %s', async (_name, send, field) => {
      const account = await createAccount(t, { credits: 100 });
      const auditRows = async () => Number((await t.db.query('SELECT count(*) AS n FROM admin_audit')) [0].n);
      const before = await auditRows();
      const res = await send(account.id);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(field);
      expect(res.body.error.message).toMatch(/well-formed/);
      expect(await auditRows()).toBe(before);
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100 });
    });
  });

  describe('row 6: prototype keys are unknown fields', () => {
    it.each([
      ['constructor', '{"phone":"+447400123456","constructor":{"x":1}}', /constructor/],
      ['__proto__', '{"phone":"+447400123456","__proto__":{"x":1}}', /__proto__/],
      ['prototype', '{"phone":"+447400123456","prototype":1}', /prototype/],
      ['nested __proto__', '{"checks":{"line_type":true,"__proto__":{"x":1}}}', /checks\.__proto__/],
    ])('refuses %s with 400 and charges nothing', async (_name, body, field) => {
      const account = await createAccount(t, { credits: 100 });
      const path = body.includes('checks') ? '/api/v1/settings' : '/api/v1/filter';
      const res = await request(t.http)[path.endsWith('settings') ? 'patch' : 'post'](path).set(account.auth).set('Content-Type', 'application/json').send(body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(field);
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100, byType: { TOPUP: 1 } });
    });
  });

  describe('row 9: secrets are not cached, not kept by Swagger UI, and the webhook secret rotates', () => {
    it('answers no-store wherever a secret can be, and on /api/v1 and /admin/v1 generally', async () => {
      const created = await request(t.http).post('/admin/v1/accounts').set(admin).send({ name: 'no-store' }).expect(201);
      expect(created.headers['cache-control']).toBe('no-store');
      const auth = { Authorization: `Bearer ${created.body.api_key as string}` };
      const answers = {
        settings: await request(t.http).get('/api/v1/settings').set(auth),
        balance: await request(t.http).get('/api/v1/balance').set(auth),
        issuedKey: await request(t.http).post(`/admin/v1/accounts/${created.body.id as string}/keys`).set(admin),
        unauthenticated: await request(t.http).get('/api/v1/balance'),
      };
      const cacheControl = Object.fromEntries(Object.entries(answers).map(([name, res]) => [name, res.headers['cache-control']]));
      expect(cacheControl).toEqual({ settings: 'no-store', balance: 'no-store', issuedKey: 'no-store', unauthenticated: 'no-store' });
    });

    it('serves Swagger UI without persisted authorization', async () => {
      const init = await request(t.http).get('/docs/swagger-ui-init.js').expect(200);
      expect(init.text).toMatch(/"persistAuthorization":\s*false/);
    });

    it('rotates the webhook secret: a new one at once, the old one still valid for 24 h', async () => {
      const account = await createAccount(t, { credits: 0 });
      const before = (await request(t.http).get('/api/v1/settings').set(account.auth).expect(200)).body.webhook_secret as string;
      const rotated = await request(t.http).post('/api/v1/settings/webhook-secret').set(account.auth).expect(200);
      expect(rotated.headers['cache-control']).toBe('no-store');
      expect(rotated.body.webhook_secret).toMatch(/^whsec_/);
      expect(rotated.body.webhook_secret).not.toBe(before);
      const graceEnds = Date.parse(rotated.body.previous_secret_valid_until as string) - Date.now();
      expect(graceEnds).toBeGreaterThan(23.9 * 3600_000);
      expect(graceEnds).toBeLessThanOrEqual(24 * 3600_000);
      expect((await request(t.http).get('/api/v1/settings').set(account.auth).expect(200)).body.webhook_secret).toBe(rotated.body.webhook_secret);
    });

    it('audits a rotation through the customer API (the key, never a secret), and erases a previous secret once its grace has passed', async () => {
      const account = await createAccount(t, { credits: 0 });
      const rotated = await request(t.http).post('/api/v1/settings/webhook-secret').set(account.auth).set('X-Request-Id', 'rotate-req-1').expect(200);
      const rows: Array<{ actor: string; before: unknown; after: unknown; request_id: string }> = await t.db.query(
        `SELECT actor, before, after, request_id FROM admin_audit WHERE action = 'account.webhook_secret.rotate' AND target_id = $1`,
        [account.id],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0].actor).toMatch(/^api-key:[0-9a-f-]{36}$/);
      expect(rows[0].request_id).toBe('rotate-req-1');
      expect(rows[0].after).toEqual({ previous_secret_valid_until: rotated.body.previous_secret_valid_until });
      expect(JSON.stringify(rows)).not.toMatch(/whsec_/);

      const settings = t.app.get(SettingsService);
      expect(await settings.webhookSecrets(account.id)).toHaveLength(2);
      await t.db.query(`UPDATE account_settings SET previous_webhook_secret_expires_at = now() - interval '1 second' WHERE account_id = $1`, [account.id]);
      expect(await settings.webhookSecrets(account.id)).toEqual([rotated.body.webhook_secret]);
      const [stored] = await t.db.query('SELECT previous_webhook_secret, previous_webhook_secret_expires_at FROM account_settings WHERE account_id = $1', [account.id]);
      expect(stored).toEqual({ previous_webhook_secret: null, previous_webhook_secret_expires_at: null });
    });
  });
});
