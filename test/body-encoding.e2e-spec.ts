import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

const ADMIN_TOKEN = 'body-encoding-admin-token-0123456789';
const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };

/**
 * Issue 35 point 5 (findings of the outside review): a body is read one way only. A JSON body declaring
 * a charset other than UTF-8 (utf-16 was decoded and charged) and a JSON body holding a key twice
 * (`{"phone":A,"phone":B}` was answered for B) are 400, on every JSON route, and nothing is charged.
 */
describe('JSON bodies: UTF-8 only, each key once', () => {
  let t: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    t = await startTestApp({ ADMIN_TOKEN });
    account = await createAccount(t, { credits: 100 });
  });
  afterAll(() => t?.close());

  const routes = () =>
    [
      ['post', '/api/v1/filter', account.auth],
      ['post', '/api/v1/risk', account.auth],
      ['post', '/api/v1/filter/bulk', account.auth],
      ['patch', '/api/v1/settings', account.auth],
      ['post', '/admin/v1/accounts', admin],
    ] as const;

  const send = (method: 'post' | 'patch', path: string, auth: Record<string, string>, contentType: string, body: Buffer | string) =>
    request(t.http)[method](path).set(auth).set('Content-Type', contentType).serialize((raw: unknown) => raw as string).send(body);

  it.each(['utf-16', 'UTF-16LE', 'utf-16be', 'latin1', 'utf-32'])('charset=%s is a 400 naming the charset, on every JSON route, and charges nothing', async (charset) => {
    const encoding = charset.toLowerCase().startsWith('utf-16') ? 'utf16le' : 'latin1';
    const body = Buffer.from(JSON.stringify({ phone: TEST_NUMBERS.connected, phones: [TEST_NUMBERS.connected] }), encoding);
    for (const [method, path, auth] of routes()) {
      const res = await send(method, path, auth, `application/json; charset=${charset}`, body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toBe(`Unsupported charset "${charset.toLowerCase()}"; send UTF-8.`);
    }
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100, byType: { TOPUP: 1 } });
  });

  it('a text/csv bulk body in another charset is refused too; UTF-8 (named or not) is read', async () => {
    const csv = `phone\n${TEST_NUMBERS.connected}\n`;
    expectError(await send('post', '/api/v1/filter/bulk', account.auth, 'text/csv; charset=utf-16le', Buffer.from(csv, 'utf16le')), 400, 'INVALID_REQUEST');
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100 });
    const other = await createAccount(t, { credits: 100 });
    expect((await send('post', '/api/v1/filter', other.auth, 'application/json; charset=UTF-8', `{"phone":"${TEST_NUMBERS.connected}"}`)).status).toBe(200);
    expect((await send('post', '/api/v1/filter', other.auth, 'application/json; charset="utf-8"', `{"phone":"${TEST_NUMBERS.connected}"}`)).status).toBe(200);
  });

  it.each([
    ['a top-level key', '{"phone":"+447400123456","phone":"+447400123457"}', 'phone'],
    ['a key spelled with an escape', '{"phone":"+447400123456","\\u0070hone":"+447400123457"}', 'phone'],
    ['a nested key', '{"phone":"+447400123456","checks":{"line_type":true,"line_type":false}}', 'checks.line_type'],
    ['a key inside an array', '{"phones":[{"phone":"+447400123456","phone":"+447400123457"}]}', 'phones[0].phone'],
    ['a key after a URL (colons inside strings)', '{"callback_url":"https://example.com:8443/x","webhook_url":"https://a.example.com/","callback_url":"https://b.example.com/"}', 'callback_url'],
  ])('%s twice is a 400 naming it, on every JSON route, and charges nothing', async (_case, body, key) => {
    for (const [method, path, auth] of routes()) {
      const res = await send(method, path, auth, 'application/json', body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toBe(`The request body has the key "${key}" twice; send each field once.`);
    }
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100, byType: { TOPUP: 1 } });
  });

  it('the same key in two objects, and colons inside strings, are no duplicates', async () => {
    const other = await createAccount(t, { credits: 100 });
    const res = await send('post', '/api/v1/risk', other.auth, 'application/json', `{"phone":"${TEST_NUMBERS.connected}","ip":"2001:db8::1"}`);
    expect(res.status).toBe(200);
    const settings = await send('patch', '/api/v1/settings', other.auth, 'application/json', '{"checks":{"line_type":true},"risk":{"thresholds":{"flag_score":30}}}');
    expect(settings.status).toBe(200);
  });
});
