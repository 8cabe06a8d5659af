import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';
import { hlrLookupsEnv } from './provider-helpers';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';

const ADMIN_TOKEN = 'ops-admin-token-0123456789';

/** The value of one series in a Prometheus text exposition (undefined when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3]);
  }
  return undefined;
}

async function scrape(t: TestApp): Promise<string> {
  const res = await request(t.http).get('/metrics').expect(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text;
}

describe('GET /metrics', () => {
  let t: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    t = await startTestApp({ ADMIN_TOKEN });
    account = await createAccount(t, { credits: 1000 });
  });
  afterAll(() => t.close());

  it('answers without authentication, in Prometheus text format, with the default process metrics', async () => {
    const text = await scrape(t);
    expect(text).toMatch(/^# TYPE process_cpu_user_seconds_total counter$/m);
    expect(text).toMatch(/^# TYPE nodejs_eventloop_lag_seconds gauge$/m);
    expect(text).toMatch(/^# TYPE http_request_duration_seconds histogram$/m);
  });

  it('counts requests by route pattern, method and status, never by raw URL', async () => {
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }).expect(200);
    await request(t.http).post('/api/v1/filter').send({ phone: TEST_NUMBERS.connected }).expect(401);
    await request(t.http).get(`/admin/v1/accounts/${account.id}`).set({ Authorization: `Bearer ${ADMIN_TOKEN}` }).expect(200);
    await request(t.http).get('/no/such/route/+447700900123').expect(404);

    const text = await scrape(t);
    expect(sample(text, 'http_requests_total', { route: '/api/v1/filter', method: 'POST', status: '200' })).toBe(1);
    expect(sample(text, 'http_requests_total', { route: '/api/v1/filter', method: 'POST', status: '401' })).toBe(1);
    expect(sample(text, 'http_requests_total', { route: '/admin/v1/accounts/:id', method: 'GET', status: '200' })).toBe(1);
    expect(sample(text, 'http_requests_total', { route: '(unmatched)', method: 'GET', status: '404' })).toBe(1);
    expect(sample(text, 'http_request_duration_seconds_count', { route: '/api/v1/filter', method: 'POST', status: '200' })).toBe(1);
    expect(text).not.toContain(account.id);
    expect(text).not.toContain('/no/such/route');
    expect(text).not.toContain('+447700900123');
  });

  it('counts lookups by check and outcome, cache hits and misses, upstream latency, credits charged and refunded', async () => {
    const before = await scrape(t);
    const phone = '+447400555123';
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone }).expect(200);
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone }).expect(200); // cached
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.failing }).expect(503);
    const after = await scrape(t);
    const delta = (name: string, labels: Record<string, string> = {}) => (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);

    expect(delta('phone_filter_lookups_total', { check: 'network_status', outcome: 'ok' })).toBe(1);
    expect(delta('phone_filter_lookups_total', { check: 'network_status', outcome: 'upstream_error' })).toBe(1);
    expect(sample(after, 'phone_filter_lookups_total', { check: 'portability', outcome: 'timeout' })).toBe(0);
    expect(delta('phone_filter_lookup_cache_hits_total')).toBe(1);
    expect(delta('phone_filter_lookup_cache_misses_total')).toBe(2);
    expect(delta('phone_filter_upstream_request_duration_seconds_count', { check: 'network_status', outcome: 'ok' })).toBe(1);
    expect(delta('phone_filter_upstream_request_duration_seconds_count', { check: 'network_status', outcome: 'upstream_error' })).toBe(1);
    expect(delta('phone_filter_credits_charged_total')).toBe(3 * 4);
    expect(delta('phone_filter_credits_refunded_total')).toBe(4);
  });

  it('reports bulk jobs by status when the bulk_jobs table exists, and still answers when it does not', async () => {
    const [{ present }] = await t.db.query(`SELECT to_regclass('bulk_jobs') IS NOT NULL AS present`);
    const text = await scrape(t);
    expect(text).toMatch(/^# TYPE phone_filter_bulk_jobs gauge$/m);
    if (present) expect(sample(text, 'phone_filter_bulk_jobs', { status: 'completed' })).toBeGreaterThanOrEqual(0);
    else expect(sample(text, 'phone_filter_bulk_jobs')).toBeUndefined();
  });

  it('is neither authenticated nor rate limited', async () => {
    const statuses = await Promise.all(Array.from({ length: 40 }, () => request(t.http).get('/metrics').then((res) => res.status)));
    expect(new Set(statuses)).toEqual(new Set([200]));
  });

  it('keeps each app on its own registry (two apps in one process)', async () => {
    const other = await startTestApp();
    try {
      const text = await scrape(other);
      expect(sample(text, 'http_requests_total', { route: '/api/v1/filter', method: 'POST', status: '200' })).toBeUndefined();
    } finally {
      await other.close();
    }
  });
});

describe('GET /metrics with the hlr-lookups provider', () => {
  let sim: UpstreamSimulator;
  let t: TestApp;
  beforeAll(async () => {
    sim = await startUpstreamSimulator();
    t = await startTestApp(hlrLookupsEnv(sim.url, { PROVIDER_BREAKER_MIN_CALLS: '2', PROVIDER_BREAKER_HALF_OPEN_MS: '60000', PROVIDER_RETRIES: '0' }));
  });
  afterAll(async () => {
    await t.close();
    await sim.close();
  });

  it('shows the circuit breaker state per lane, closed then open once the upstream fails', async () => {
    const account = await createAccount(t, { credits: 1000 });
    let text = await scrape(t);
    for (const lane of ['interactive', 'batch']) {
      expect(sample(text, 'phone_filter_upstream_circuit_state', { provider: 'hlr-lookups', lane, state: 'closed' })).toBe(1);
      expect(sample(text, 'phone_filter_upstream_circuit_state', { provider: 'hlr-lookups', lane, state: 'open' })).toBe(0);
    }

    // A number the upstream fails is that number's failure: the breaker stays closed.
    for (let i = 0; i < 2; i++) {
      await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.failing }).expect(503);
    }
    text = await scrape(t);
    expect(sample(text, 'phone_filter_upstream_circuit_state', { provider: 'hlr-lookups', lane: 'interactive', state: 'closed' })).toBe(1);

    // 3 upstream failures of 5 calls in the window: over the 0.5 failure rate.
    sim.setOptions({ outage: true });
    for (let i = 0; i < 3; i++) {
      await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }).expect(503);
    }
    sim.setOptions({ outage: false });
    text = await scrape(t);
    expect(sample(text, 'phone_filter_upstream_circuit_state', { provider: 'hlr-lookups', lane: 'interactive', state: 'open' })).toBe(1);
    expect(sample(text, 'phone_filter_upstream_circuit_state', { provider: 'hlr-lookups', lane: 'interactive', state: 'closed' })).toBe(0);
    expect(sample(text, 'phone_filter_upstream_circuit_state', { provider: 'hlr-lookups', lane: 'batch', state: 'closed' })).toBe(1);
    expect(sample(text, 'phone_filter_credits_refunded_total')).toBe(20);
  });
});

describe('security headers (helmet)', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it.each(['/health/live', '/api/v1/balance', '/no/such/route'])('sets them on %s', async (path) => {
    const res = await request(t.http).get(path);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    expect(res.headers['strict-transport-security']).toMatch(/max-age=\d+/);
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['content-security-policy']).toContain("default-src 'self'");
    expect(res.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
    expect(res.headers['x-powered-by']).toBeUndefined();
  });

  it('keeps Swagger UI loadable under the CSP: only same-origin scripts, which are served', async () => {
    const page = await request(t.http).get('/docs/').redirects(1).expect(200);
    const csp = page.headers['content-security-policy'] as string;
    expect(csp).toMatch(/script-src 'self'/);
    expect(csp).toMatch(/style-src [^;]*'unsafe-inline'/);
    const scripts = [...page.text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(body.trim()).toBe(''); // an inline script would be blocked by script-src 'self'
      const src = /src=["']([^"']+)["']/.exec(attributes)?.[1];
      expect(src).toBeDefined();
      expect(src).not.toMatch(/^(https?:)?\/\//);
      await request(t.http).get(new URL(src!, 'http://x/docs/').pathname).expect(200);
    }
  });
});

describe('CORS', () => {
  const ORIGIN = 'https://app.example.com';

  it('is off by default: no CORS headers, preflights not answered', async () => {
    const t = await startTestApp();
    try {
      const res = await request(t.http).get('/health/live').set('Origin', ORIGIN).expect(200);
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      const preflight = await request(t.http)
        .options('/api/v1/filter')
        .set('Origin', ORIGIN)
        .set('Access-Control-Request-Method', 'POST');
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await t.close();
    }
  });

  it('allows the listed origins only, with the API headers', async () => {
    const t = await startTestApp({ CORS_ORIGINS: `${ORIGIN},http://localhost:5173` });
    try {
      const allowed = await request(t.http).get('/health/live').set('Origin', ORIGIN).expect(200);
      expect(allowed.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(allowed.headers['access-control-expose-headers']).toContain('X-Request-Id');
      expect(allowed.headers['access-control-allow-credentials']).toBeUndefined();
      const other = await request(t.http).get('/health/live').set('Origin', 'https://evil.example.com').expect(200);
      expect(other.headers['access-control-allow-origin']).toBeUndefined();

      const preflight = await request(t.http)
        .options('/api/v1/filter')
        .set('Origin', ORIGIN)
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization,content-type,idempotency-key')
        .expect(204);
      expect(preflight.headers['access-control-allow-origin']).toBe(ORIGIN);
      expect(preflight.headers['access-control-allow-headers']).toMatch(/Authorization.*Content-Type.*Idempotency-Key/);
      expect(preflight.headers['access-control-allow-methods']).toContain('POST');
    } finally {
      await t.close();
    }
  });

  it('allows every origin with CORS_ORIGINS=*', async () => {
    const t = await startTestApp({ CORS_ORIGINS: '*' });
    try {
      const res = await request(t.http).get('/health/live').set('Origin', 'https://anyone.example.org').expect(200);
      expect(res.headers['access-control-allow-origin']).toBe('*');
    } finally {
      await t.close();
    }
  });
});

describe('TRUST_PROXY: the client address behind a load balancer', () => {
  // Failed authentications are limited per client address (req.ip): 2 per window here.
  const limits = { IP_RATE_LIMIT: '2', IP_RATE_WINDOW_SECONDS: '60' };
  const badKey = { Authorization: 'Bearer pf_live_notakeynotakeynotakeynotakeynotakey' };

  async function statusesFrom(t: TestApp, forwardedFor: string[]): Promise<number[]> {
    const statuses: number[] = [];
    for (const address of forwardedFor) {
      statuses.push((await request(t.http).get('/api/v1/balance').set(badKey).set('X-Forwarded-For', address)).status);
    }
    return statuses;
  }

  it('by default ignores X-Forwarded-For (a client cannot pick its own address)', async () => {
    const t = await startTestApp({ ...limits });
    try {
      expect(await statusesFrom(t, ['203.0.113.1', '203.0.113.2', '203.0.113.3'])).toEqual([401, 401, 429]);
    } finally {
      await t.close();
    }
  });

  it.each([['1'], ['loopback'], ['true']])('with TRUST_PROXY=%s takes the client address from X-Forwarded-For', async (trustProxy) => {
    const t = await startTestApp({ ...limits, TRUST_PROXY: trustProxy });
    try {
      expect(await statusesFrom(t, ['203.0.113.1', '203.0.113.2', '203.0.113.3'])).toEqual([401, 401, 401]);
      expect(await statusesFrom(t, ['198.51.100.7', '198.51.100.7', '198.51.100.7'])).toEqual([401, 401, 429]);
    } finally {
      await t.close();
    }
  });
});
