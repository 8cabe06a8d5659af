import request from 'supertest';
import { hashApiKey } from '../src/auth/api-key-format';
import { createAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { expectError } from './helpers/expect-error';
import { startTestApp, TestApp } from './helpers/test-app';

describe('API key authentication', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('lets a valid key through', async () => {
    const account = await createAccount(t, { credits: 7 });
    const res = await request(t.http).get('/api/v1/balance').set(account.auth).expect(200);
    expect(res.body).toEqual({ balance: 7 });
  });

  it.each([
    ['no Authorization header', undefined],
    ['an empty header', ''],
    ['the Basic scheme', 'Basic dXNlcjpwYXNz'],
    ['Bearer without a key', 'Bearer'],
    ['Bearer with an empty key', 'Bearer '],
    ['a key of the wrong shape', 'Bearer not-a-key'],
    ['an unknown key of the right shape', 'Bearer pf_live_00000000000000000000000000000000'],
    ['two tokens', 'Bearer pf_live_00000000000000000000000000000000 extra'],
  ])('refuses %s with 401 INVALID_API_KEY', async (_case, header) => {
    const req = request(t.http).get('/api/v1/balance');
    if (header !== undefined) req.set('Authorization', header);
    expectError(await req, 401, 'INVALID_API_KEY');
  });

  it('accepts the scheme in any case', async () => {
    const account = await createAccount(t);
    await request(t.http).get('/api/v1/balance').set('Authorization', `bearer ${account.apiKey}`).expect(200);
  });

  it('refuses a revoked key at once with 401 REVOKED_API_KEY', async () => {
    const account = await createAccount(t);
    await request(t.http).get('/api/v1/balance').set(account.auth).expect(200);
    const [key] = await t.db.query(`SELECT id FROM api_keys WHERE account_id = $1`, [account.id]);
    await t.admin.revokeKey(key.id);
    expectError(await request(t.http).get('/api/v1/balance').set(account.auth), 401, 'REVOKED_API_KEY');
  });

  it('refuses the key of a disabled account with 401 REVOKED_API_KEY', async () => {
    const account = await createAccount(t);
    await request(t.http).get('/api/v1/balance').set(account.auth).expect(200);
    await t.db.query(`UPDATE accounts SET disabled = true WHERE id = $1`, [account.id]);
    // The per-instance auth cache keeps the account's state for up to a second: the refusal comes once it lapses.
    const refused = await eventually(
      () => request(t.http).get('/api/v1/balance').set(account.auth),
      (res) => res.status !== 200,
      30_000,
    );
    expectError(refused, 401, 'REVOKED_API_KEY');
  });

  it('stores only the hash and a display prefix of a key', async () => {
    const account = await createAccount(t);
    const rows = await t.db.query(`SELECT * FROM api_keys WHERE account_id = $1`, [account.id]);
    expect(rows).toHaveLength(1);
    const row = rows[0];
    expect(row.key_hash).toBe(hashApiKey(account.apiKey));
    expect(row.prefix).toBe(account.apiKey.slice(0, 12));
    const secret = account.apiKey.slice(8);
    for (const value of Object.values(row)) {
      const text = value instanceof Date ? value.toISOString() : String(value);
      expect(text).not.toContain(secret);
      expect(text).not.toContain(secret.slice(4, 20));
    }
  });

  it('records last_used_at on use', async () => {
    const account = await createAccount(t);
    await request(t.http).get('/api/v1/balance').set(account.auth).expect(200);
    // Written off the request path: wait for the row, not for a set time.
    const row = await eventually(
      async () => ((await t.db.query(`SELECT last_used_at FROM api_keys WHERE account_id = $1`, [account.id])) as Array<{ last_used_at: Date | null }>)[0],
      (found) => found.last_used_at !== null,
      30_000,
    );
    expect(row.last_used_at).toBeInstanceOf(Date);
  });

  it('does not require a key on health and docs', async () => {
    await request(t.http).get('/health/live').expect(200);
    await request(t.http).get('/health/ready').expect(200);
    await request(t.http).get('/docs-json').expect(200);
  });

  it('without ADMIN_TOKEN, the served document does not list the admin API (its routes answer 404 here)', async () => {
    const document = (await request(t.http).get('/docs-json').expect(200)).body as { paths: Record<string, unknown>; tags: { name: string }[] };
    expect(Object.keys(document.paths).filter((path) => path.startsWith('/admin/'))).toEqual([]);
    expect(document.tags.map((tag) => tag.name)).not.toContain('admin');
    await request(t.http).get('/admin/v1/plans').expect(404);
  });
});
