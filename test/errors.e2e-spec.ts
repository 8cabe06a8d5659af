import request from 'supertest';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount, TestAccount } from './factories/accounts';
import { expectError } from './helpers/expect-error';
import { proxiedDatabaseUrl } from './helpers/tcp-proxy';
import { startTestApp, TestApp } from './helpers/test-app';

describe('errors in the contract shape', () => {
  let t: TestApp;
  let account: TestAccount;
  let initialBalance: number;
  beforeAll(async () => {
    t = await startTestApp();
    account = await createAccount(t);
    initialBalance = await t.app.get(CreditsService).balance(account.id);
  });
  afterAll(() => t.close());

  it('answers an unknown route with 404 NOT_FOUND', async () => {
    const res = await request(t.http).get('/api/v1/nope').set(account.auth);
    expectError(res, 404, 'NOT_FOUND');
    expect(res.body.error.message).toContain('/api/v1/nope');
    expectError(await request(t.http).delete('/'), 404, 'NOT_FOUND');
  });

  it('answers malformed JSON with 400 INVALID_REQUEST, after authentication', async () => {
    const bad = () => request(t.http).patch('/api/v1/settings').set('Content-Type', 'application/json').send('{"checks": {');
    const res = await bad().set(account.auth);
    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.message).toBe('The request body is not valid JSON.');
    expectError(await bad(), 401, 'INVALID_API_KEY');
  });

  it('answers a wrong content type with 400 INVALID_REQUEST', async () => {
    const res = await request(t.http).patch('/api/v1/settings').set(account.auth).set('Content-Type', 'text/plain').send('checks=1');
    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.message).toContain('Content-Type');
  });

  it('answers a 2 MiB body with 413 PAYLOAD_TOO_LARGE', async () => {
    const big = JSON.stringify({ checks: { line_type: true }, padding: 'x'.repeat(2 * 1024 * 1024) });
    const res = await request(t.http).patch('/api/v1/settings').set(account.auth).set('Content-Type', 'application/json').send(big);
    expectError(res, 413, 'PAYLOAD_TOO_LARGE');
  });

  it('names the field and the rule in validation errors', async () => {
    const res = await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { line_type: 'yes' } });
    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.message).toBe('checks.line_type must be a boolean value.');
    const unknown = await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: {}, colour: 'red' });
    expectError(unknown, 400, 'INVALID_REQUEST');
    expect(unknown.body.error.message).toContain('unknown field "colour"');
  });

  it('a typo is one message with the way out: {"phon": …} → did you mean "phone"; {"line_type": true} → under "checks"', async () => {
    const typo = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phon: '+447400123456' });
    expectError(typo, 400, 'INVALID_REQUEST');
    expect(typo.body.error.message).toBe('unknown field "phon": did you mean "phone"?');
    const misplaced = await request(t.http).patch('/api/v1/settings').set(account.auth).send({ line_type: true });
    expectError(misplaced, 400, 'INVALID_REQUEST');
    expect(misplaced.body.error.message).toBe('unknown field "line_type": it belongs under "checks": {"checks": {"line_type": …}}.');
    const missing = await request(t.http).post('/api/v1/filter').set(account.auth).send({});
    expect(missing.body.error.message).toBe('phone is required.');
  });

  it('a 00 or national number is told to be written as +44…, without the number echoed back', async () => {
    const international = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: '0044 20 7946 0958' });
    expectError(international, 400, 'INVALID_REQUEST');
    expect(international.body.error.message).toContain('write it with "+" instead of 00, as +44…');
    const national = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: '020 7946 0958' });
    expectError(national, 400, 'INVALID_REQUEST');
    expect(national.body.error.message).toContain('write it as +44…');
    for (const res of [international, national]) expect(res.body.error.message).not.toMatch(/7946/);
    expect(await t.app.get(CreditsService).balance(account.id)).toBe(initialBalance);
  });

  it('answers a deeply nested body with 400 INVALID_REQUEST, not 500', async () => {
    const deep = '{"checks":'.repeat(5000) + '{}' + '}'.repeat(5000);
    const res = await request(t.http).patch('/api/v1/settings').set(account.auth).set('Content-Type', 'application/json').send(deep);
    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.message).toMatch(/nested deeper than 32/);
  });

  it('answers a body that is not an object with 400 INVALID_REQUEST', async () => {
    for (const body of ['[]', '"x"', '1', 'null', 'true']) {
      const res = await request(t.http).patch('/api/v1/settings').set(account.auth).set('Content-Type', 'application/json').send(body);
      expectError(res, 400, 'INVALID_REQUEST');
    }
  });

  it('answers a database outage with 503 SERVICE_UNAVAILABLE, not 500, and recovers', async () => {
    const { url, proxy } = await proxiedDatabaseUrl(process.env.DATABASE_URL!);
    const outage = await startTestApp({ DATABASE_URL: url });
    try {
      const victim = await createAccount(outage);
      await request(outage.http).get('/api/v1/settings').set(victim.auth).expect(200);
      await proxy.cut();
      const res = await request(outage.http).get('/api/v1/settings').set(victim.auth);
      expectError(res, 503, 'SERVICE_UNAVAILABLE');
      expect(JSON.stringify(res.body)).not.toMatch(/SELECT|ECONN|terminated|driver|stack/i);
      const ready = await request(outage.http).get('/health/ready');
      expectError(ready, 503, 'SERVICE_UNAVAILABLE');
      await proxy.restore();
      await request(outage.http).get('/api/v1/settings').set(victim.auth).expect(200);
    } finally {
      await proxy.cut();
      await outage.close().catch(() => undefined);
    }
  });

  it('sets X-Request-Id on every response, keeping a sane one from the client', async () => {
    const mine = await request(t.http).get('/health/live').set('X-Request-Id', 'abc-123');
    expect(mine.headers['x-request-id']).toBe('abc-123');
    const generated = await request(t.http).get('/health/live').set('X-Request-Id', 'bad id with spaces');
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const onError = await request(t.http).get('/nope');
    expect(onError.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
