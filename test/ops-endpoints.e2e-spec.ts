import request from 'supertest';
import { expectError } from './helpers/expect-error';
import { startTestApp, TestApp } from './helpers/test-app';

const ADMIN_TOKEN = 'ops-endpoints-admin-token-0123456';
const METRICS_TOKEN = 'ops-endpoints-metrics-token-98765';
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/**
 * Issue 24 #12: with NODE_ENV=production, /docs, /docs-json (the whole admin API), /metrics (credit
 * totals) and /health/ready's detail (provider and Redis state) were open to anyone reaching the port.
 */
describe('ops endpoints: private in production, configurable', () => {
  describe('NODE_ENV=production (default OPS_ENDPOINTS=private)', () => {
    let t: TestApp;
    beforeAll(async () => (t = await startTestApp({ NODE_ENV: 'production', DATA_HASH_KEY: 'k'.repeat(32), ADMIN_TOKEN, METRICS_TOKEN, OPS_ENDPOINTS: undefined })));
    afterAll(() => t?.close());

    it.each(['/docs', '/docs/', '/docs-json', '/metrics'])('refuses %s without a token, and with a wrong one, in the contract shape', async (path) => {
      expectError(await request(t.http).get(path), 401, 'INVALID_API_KEY');
      const wrong = await request(t.http).get(path).set(bearer('not-the-token-at-all-0000'));
      expectError(wrong, 401, 'INVALID_API_KEY');
      expect(wrong.body.error.message).toMatch(/private on this deployment/);
    });

    it('serves the docs and metrics with the ADMIN_TOKEN, and metrics (only) with METRICS_TOKEN, as a Prometheus scrape sends it', async () => {
      const document = await request(t.http).get('/docs-json').set(bearer(ADMIN_TOKEN)).expect(200);
      expect(document.body.paths['/admin/v1/accounts']).toBeDefined();
      await request(t.http).get('/docs/').set(bearer(ADMIN_TOKEN)).expect(200);
      expect((await request(t.http).get('/metrics').set(bearer(METRICS_TOKEN)).expect(200)).text).toMatch(/# TYPE/);
      await request(t.http).get('/metrics').set(bearer(ADMIN_TOKEN)).expect(200);
      expectError(await request(t.http).get('/docs-json').set(bearer(METRICS_TOKEN)), 401, 'INVALID_API_KEY');
    });

    it('keeps the bare liveness and readiness status public, and the readiness detail for a token', async () => {
      expect((await request(t.http).get('/health/live').expect(200)).body).toEqual({ status: 'ok' });
      expect((await request(t.http).get('/health/ready').expect(200)).body).toEqual({ status: 'ok' });
      const detailed = await request(t.http).get('/health/ready').set(bearer(METRICS_TOKEN)).expect(200);
      expect(detailed.body.info).toMatchObject({ database: { status: 'up' }, provider: { status: 'up' } });
    });
  });

  describe('NODE_ENV=production with OPS_ENDPOINTS=public', () => {
    let t: TestApp;
    beforeAll(async () => (t = await startTestApp({ NODE_ENV: 'production', DATA_HASH_KEY: 'k'.repeat(32), ADMIN_TOKEN, OPS_ENDPOINTS: 'public' })));
    afterAll(() => t?.close());

    it('serves all of them to anyone, as before', async () => {
      await request(t.http).get('/docs-json').expect(200);
      await request(t.http).get('/metrics').expect(200);
      expect((await request(t.http).get('/health/ready').expect(200)).body.info).toBeDefined();
    });
  });
});
