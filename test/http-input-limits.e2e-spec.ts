import { Logger } from '@nestjs/common';
import { hostname } from 'node:os';
import zlib, { gzipSync } from 'node:zlib';
import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { expectError } from './helpers/expect-error';
import { eventually } from './helpers/eventually';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * Findings of the second outside review (issue 24) on the HTTP edge, one describe per finding; each
 * test failed on the code before its fix.
 */
describe('outside review, HTTP edge', () => {
  let t: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    t = await startTestApp();
    account = await createAccount(t, { credits: 100 });
  });
  afterAll(() => t?.close());

  describe('#1: a text/csv body the CSV parser cannot read is answered like JSON, never 500', () => {
    const over1MiB = 'phone\n' + '+447400123456\n'.repeat(80_000);
    it.each([
      ['an unknown charset', { 'Content-Type': 'text/csv; charset=foo' }, 'phone\n+447400123456\n', 400, /charset/],
      ['over 1 MiB', { 'Content-Type': 'text/csv' }, over1MiB, 413, /1 MiB/],
      ['over 1 MiB once inflated', { 'Content-Type': 'text/csv', 'Content-Encoding': 'gzip' }, gzipSync(over1MiB), 413, /1 MiB/],
      ['a gzip body that is not gzip', { 'Content-Type': 'text/csv', 'Content-Encoding': 'gzip' }, 'notgzip', 400, /could not be decoded/],
      ['Content-Encoding: zstd', { 'Content-Type': 'text/csv', 'Content-Encoding': 'zstd' }, 'phone\n', 400, /Content-Encoding/],
    ])('%s', async (_case, headers, body, status, message) => {
      for (const [method, path] of [['post', '/api/v1/filter/bulk'], ['post', '/api/v1/filter'], ['patch', '/api/v1/settings']] as const) {
        const res = await request(t.http)[method](path).set(account.auth).set(headers).serialize((raw: unknown) => raw as string).send(body);
        expectError(res, status, status === 413 ? 'PAYLOAD_TOO_LARGE' : 'INVALID_REQUEST');
        expect(res.body.error.message).toMatch(message);
        expect(res.body.error.message).not.toMatch(/JSON/);
      }
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100 });
    });
  });

  describe('#2: null is not "absent" in PATCH /api/v1/settings', () => {
    it.each([
      [{ checks: null }, /checks must not be null/],
      [{ checks: { network_status: null } }, /checks\.network_status must not be null/],
      [{ checks: { line_type: true, portability: null } }, /checks\.portability must not be null/],
    ])('%j is a 400 naming the field, and changes nothing', async (body, message) => {
      const before = await request(t.http).get('/api/v1/settings').set(account.auth).expect(200);
      const res = await request(t.http).patch('/api/v1/settings').set(account.auth).send(body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(message);
      const after = await request(t.http).get('/api/v1/settings').set(account.auth).expect(200);
      expect(after.body.checks).toEqual(before.body.checks);
    });

    it('still clears the nullable controls with null', async () => {
      await request(t.http).patch('/api/v1/settings').set(account.auth).send({ daily_credit_limit: 10 }).expect(200);
      const res = await request(t.http).patch('/api/v1/settings').set(account.auth).send({ daily_credit_limit: null }).expect(200);
      expect(res.body.daily_credit_limit).toBeNull();
    });
  });

  describe('#4: a body is inflated in full only for a valid key', () => {
    // The review's bomb: 1,056 bytes of gzip that inflate to 1 MiB of [1,1,…].
    const inflated = '[' + '1,'.repeat(512 * 1024 - 2) + '1 ]';
    const bomb = gzipSync(inflated, { level: 9 });
    const BUDGET = 4096;
    let limited: TestApp;
    let inflatedBytes = 0;
    const createGunzip = zlib.createGunzip;
    beforeAll(async () => {
      limited = await startTestApp({ IP_RATE_LIMIT: '3', IP_RATE_WINDOW_SECONDS: '60', UNAUTHENTICATED_BODY_LIMIT_BYTES: String(BUDGET) });
      // Counts what body-parser's gunzip streams really produce: the CPU the review measured.
      // (zlib's exports are read-only but configurable: redefined, then put back.)
      Object.defineProperty(zlib, 'createGunzip', {
        configurable: true,
        value: (options?: zlib.ZlibOptions) => {
          const stream = createGunzip(options);
          stream.on('data', (chunk: Buffer) => (inflatedBytes += chunk.length));
          return stream;
        },
      });
    });
    afterAll(async () => {
      Object.defineProperty(zlib, 'createGunzip', { configurable: true, value: createGunzip });
      await limited?.close();
    });
    const send = (auth: Record<string, string>) =>
      request(limited.http).post('/api/v1/filter').set(auth).set({ 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' }).serialize((raw: unknown) => raw as string).send(bomb);

    it('answers the bomb without a key 401 having inflated at most a few chunks, then 429 past the failed-auth limit', async () => {
      expect(bomb.length).toBeLessThan(1200);
      expect(inflated.length).toBe(1024 * 1024);
      const statuses: number[] = [];
      const attempts: Array<Record<string, string>> = [{}, { Authorization: `Bearer pf_live_${'Zz9'.repeat(11)}` }, { Authorization: 'Bearer not-a-key' }, {}, {}];
      for (const auth of attempts) {
        inflatedBytes = 0;
        const res = await send(auth);
        statuses.push(res.status);
        expectError(res, res.status, res.status === 401 ? 'INVALID_API_KEY' : 'RATE_LIMITED');
        // zlib hands out 16 KiB at a time: the budget stops it after the first chunk or two, never 1 MiB.
        expect(inflatedBytes).toBeLessThanOrEqual(BUDGET + 2 * 16 * 1024);
      }
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
    });

    it('reads the same body in full for a valid key (400: not a JSON object, as before)', async () => {
      const valid = await createAccount(limited, { credits: 10 });
      inflatedBytes = 0;
      const res = await send(valid.auth);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(/JSON object/);
      expect(inflatedBytes).toBe(inflated.length);
      expect(await ledgerState(limited.db, valid.id)).toMatchObject({ balance: 10 });
    });
  });

  describe('#13: wrong admin tokens cannot lock the right one out', () => {
    it('serves the right token after 20 wrong ones from the same address, and still answers the wrong ones 429', async () => {
      const token = 'review-13-admin-token-0123456789';
      const app = await startTestApp({ ADMIN_TOKEN: token, IP_RATE_LIMIT: '20', IP_RATE_WINDOW_SECONDS: '60', REDIS_URL: undefined });
      try {
        const call = (bearer: string) => request(app.http).get('/admin/v1/plans').set('Authorization', `Bearer ${bearer}`);
        const statuses: number[] = [];
        for (let i = 0; i < 20; i++) statuses.push((await call(`wrong-admin-token-${i}-abcdef`)).status);
        expect(statuses).toEqual(Array(20).fill(401));
        expect((await call(token)).status).toBe(200);
        expectError(await call('wrong-admin-token-21-abcdef'), 429, 'RATE_LIMITED');
        expect((await call(token)).status).toBe(200);
      } finally {
        await app.close();
      }
    });
  });

  describe('#8: a failed delivery shown to the customer names no internal host or address', () => {
    it('says the host is not public in last_error, and keeps the resolved address for the operator log', async () => {
      const warn = jest.spyOn(Logger.prototype, 'warn');
      // This machine's own name resolves to a loopback address, as `vm` did in the review (port 9, the
      // discard port, allowed for it: callback ports are 80 and 443 unless CALLBACK_ALLOWED_PORTS says).
      const app = await startTestApp({ PROVIDER: 'sandbox', EVENTS_POLL_INTERVAL_MS: '100', BULK_WEBHOOK_RETRIES: '0', BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS: 'false', CALLBACK_ALLOWED_PORTS: '9' });
      try {
        const victim = await createAccount(app, { credits: 8 });
        await request(app.http).patch('/api/v1/settings').set(victim.auth).send({ low_balance_threshold: 5, webhook_url: `http://${hostname()}:9/hook` }).expect(200);
        await request(app.http).post('/api/v1/filter').set(victim.auth).send({ phone: TEST_NUMBERS.connected }).expect(200);
        const page = await eventually(
          async () => (await request(app.http).get('/api/v1/events').set(victim.auth).expect(200)).body,
          (body) => body.events[0]?.state === 'failed',
          10_000,
        );
        const shown: string = page.events[0].last_error;
        expect(shown).toBe('callback not delivered: its host does not resolve to a public address');
        expect(shown).not.toContain(hostname());
        expect(shown).not.toMatch(/127\.|::1|\d+\.\d+\.\d+\.\d+/);
        const logged = warn.mock.calls.map((call) => String(call[0])).filter((line) => line.includes('given up'));
        expect(logged.join('\n')).toMatch(/resolves to no public address \(127\./);
      } finally {
        warn.mockRestore();
        await app.close();
      }
    });
  });

  describe('#14: watchlist input', () => {
    const create = (body: object) => request(t.http).post('/api/v1/watchlists').set(account.auth).send(body);
    it.each([
      ['a C1 control (U+0085)', 'ref\u0085x', /references\[1\] contains a control character \(U\+0085\)/],
      ['a bidi override (U+202E)', 'invoice-\u202Efdp.exe', /references\[1\] contains a bidirectional override \(U\+202E\)/],
      ['a bidi isolate (U+2066)', '\u2066x', /references\[1\] contains a bidirectional override \(U\+2066\)/],
    ])('refuses a reference with %s, naming it', async (_case, reference, message) => {
      const res = await create({ phones: [TEST_NUMBERS.connected, TEST_NUMBERS.absent], interval: 'weekly', references: ['ok', reference] });
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(message);
    });

    it('keeps right-to-left marks (U+200F), which Hebrew and Arabic references need', async () => {
      const res = await create({ phones: [TEST_NUMBERS.connected], interval: 'weekly', references: ['\u05D0\u200F-1'] });
      expect(res.status).toBe(201);
    });

    it('takes callback_url: null on create as no callback', async () => {
      const res = await create({ phones: [TEST_NUMBERS.connected], interval: 'weekly', callback_url: null });
      expect(res.status).toBe(201);
      const shown = await request(t.http).get(`/api/v1/watchlists/${res.body.id}`).set(account.auth).expect(200);
      expect(shown.body.callback_url).toBeNull();
    });

    it('answers PATCH with {} 400 "nothing to change", and changes nothing', async () => {
      const created = await create({ phones: [TEST_NUMBERS.connected], interval: 'weekly', name: 'unchanged' });
      expect(created.status).toBe(201);
      const res = await request(t.http).patch(`/api/v1/watchlists/${created.body.id}`).set(account.auth).send({});
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(/^Nothing to change: send at least one of name, interval, callback_url, paused, add, remove\.$/);
      await request(t.http).patch(`/api/v1/watchlists/${created.body.id}`).set(account.auth).send({ name: 'changed' }).expect(200);
    });
  });
});
