import request from 'supertest';
import { createAccount } from './factories/accounts';
import { startTestApp, TestApp } from './helpers/test-app';

describe('smoke', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('answers the balance of a new account', async () => {
    const account = await createAccount(t, { credits: 50 });
    const res = await request(t.http).get('/api/v1/balance').set(account.auth);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ balance: 50 });
  });
});
