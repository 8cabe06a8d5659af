import { TEST_NUMBERS } from './helpers/numbers';
import { freePort, ServiceProcess, startServiceProcess } from './helpers/service-process';

const ADMIN_TOKEN = 'logging-admin-token-0123456789';

interface Call {
  method: string;
  path: string;
  status: number;
  requestId: string;
  authenticated: boolean;
}

interface LogLine {
  level: string;
  msg?: string;
  requestId?: string;
  accountId?: string;
  route?: string;
  method?: string;
  status?: number;
  durationMs?: number;
  url?: string;
  query?: string;
}

/**
 * The real service (a child process, LOG_LEVEL=debug) through a whole customer flow; then its captured
 * stdout and stderr are searched for every secret and every full number the flow used.
 */
describe('logs: one JSON line per request, and no key, token or full phone number anywhere', () => {
  let service: ServiceProcess;
  const calls: Call[] = [];
  const secrets: Record<string, string> = { ADMIN_TOKEN };
  const phones = [TEST_NUMBERS.connected, TEST_NUMBERS.failing, TEST_NUMBERS.ported, TEST_NUMBERS.absent, '+447700900123', '+14155552671'];
  let accountId: string;
  let lines: LogLine[];

  async function call(method: string, path: string, options: { key?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...options.headers };
    if (options.key) headers.Authorization = `Bearer ${options.key}`;
    if (options.body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(`${service.baseUrl}${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body),
    });
    const body = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
    calls.push({ method, path, status: res.status, requestId: res.headers.get('x-request-id')!, authenticated: options.key !== undefined && options.key !== secrets.unknownKey });
    return { status: res.status, body };
  }

  beforeAll(async () => {
    service = await startServiceProcess({ LOG_LEVEL: 'debug', ADMIN_TOKEN, PROVIDER: 'sandbox', REDIS_URL: undefined }, await freePort());
    await service.waitFor(/listening on/);

    const admin = { ...{}, Authorization: `Bearer ${ADMIN_TOKEN}` };
    const created = await call('POST', '/admin/v1/accounts', { headers: admin, body: { name: 'logging test', plan: 'enterprise', credits: 12 } });
    expect(created.status).toBe(201);
    accountId = created.body!.id as string;
    secrets.apiKey = created.body!.api_key as string;
    const second = await call('POST', `/admin/v1/accounts/${accountId}/keys`, { headers: admin });
    secrets.revokedKey = second.body!.api_key as string;
    expect((await call('POST', `/admin/v1/keys/${second.body!.id as string}/revoke`, { headers: admin })).status).toBe(200);
    secrets.unknownKey = `pf_live_${'Zz9'.repeat(11)}`;
    const key = secrets.apiKey;

    expect((await call('POST', '/api/v1/filter', { key, body: { phone: TEST_NUMBERS.connected } })).status).toBe(200);
    expect((await call('POST', '/api/v1/filter', { key, body: { phone: TEST_NUMBERS.failing } })).status).toBe(503);
    expect((await call('POST', '/api/v1/filter', { key, body: { phone: TEST_NUMBERS.ported, source: 'crm' }, headers: { 'Idempotency-Key': 'log-test-1' } })).status).toBe(200);
    expect((await call('POST', '/api/v1/filter', { key, body: { phone: '+44 7400 120000' } })).status).toBe(200); // TEST_NUMBERS.absent, spaced
    expect((await call('POST', '/api/v1/filter', { key, body: { phone: '+14155552671' } })).status).toBe(402);
    expect((await call('POST', '/api/v1/filter', { key, body: { phone: '07700 900123' } })).status).toBe(400);
    expect((await call('POST', '/api/v1/filter', { key, body: '{"phone": "+447700900123"' })).status).toBe(400);
    expect((await call('POST', '/api/v1/filter', { key: secrets.revokedKey, body: { phone: TEST_NUMBERS.connected } })).status).toBe(401);
    expect((await call('POST', '/api/v1/filter', { key: secrets.unknownKey, body: { phone: TEST_NUMBERS.connected } })).status).toBe(401);
    expect((await call('GET', '/api/v1/balance', { key, headers: { Cookie: `session=${key}`, 'X-Api-Key': key } })).status).toBe(200);
    expect((await call('PATCH', '/api/v1/settings', { key, body: { checks: { line_type: true } } })).status).toBe(200);
    expect((await call('GET', '/api/v1/usage?limit=5', { key })).status).toBe(200);
    expect((await call('GET', '/api/v1/filter/%2B447700900123', { key })).status).toBe(404);
    expect((await call('GET', '/metrics')).status).toBe(200);
    // Secrets and numbers put in URLs (issue 12, row 2): refused, and kept out of the log all the same.
    expect((await call('GET', `/api/v1/balance?api_key=${key}`)).status).toBe(401);
    expect((await call('GET', `/admin/v1/plans?token=${ADMIN_TOKEN}`)).status).toBe(401);
    expect((await call('GET', `/api/v1/usage?limit=5&${key}`, { key })).status).toBe(400);
    expect((await call('GET', '/api/v1/usage?limit=5&phone=%2B44%207400%20123456', { key })).status).toBe(400);
    expect((await call('GET', '/api/v1/nope?phone=%2B1%20415%20555%202671', { key })).status).toBe(404);

    expect(await service.stop('SIGTERM')).toBe(0);
    lines = service
      .output()
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as LogLine);
  }, 90_000);

  afterAll(() => service?.stop('SIGKILL'));

  it('writes nothing but JSON lines', () => {
    expect(lines.length).toBeGreaterThan(20);
    for (const line of lines) expect(typeof line.level).toBe('string');
  });

  it.each(['apiKey', 'revokedKey', 'unknownKey', 'ADMIN_TOKEN'])('never shows the %s, nor its secret part', (name) => {
    const secret = secrets[name];
    const output = service.output();
    expect(output).not.toContain(secret);
    expect(output).not.toContain(secret.replace(/^pf_live_/, '').slice(0, 16));
  });

  it('never shows a full phone number, in any spelling, but does show masked ones', () => {
    const output = service.output();
    for (const phone of phones) {
      const digits = phone.slice(1);
      expect(output).not.toContain(digits);
      expect(output).not.toContain(`${digits.slice(0, 2)} ${digits.slice(2, 6)}`); // the spaced spelling sent above
      expect(output).not.toContain(`${digits.slice(0, 2)}%20${digits.slice(2, 6)}`); // and its URL-encoded form
    }
    expect(output).not.toMatch(/%2B1%20415/i);
    expect(output).toContain('+44740012****'); // the failed lookup's warning
  });

  it('logs the route pattern and the query without its values, never the URL', () => {
    const requestLines = lines.filter((line) => line.status !== undefined);
    expect(requestLines.filter((line) => line.url !== undefined)).toEqual([]);
    const queries = requestLines.map((line) => line.query).filter((query) => query !== undefined);
    // Only declared parameter names are shown: api_key, token and phone are not query parameters of the API.
    expect(queries).toEqual(expect.arrayContaining(['(name)=*', 'limit=*&(name)=*']));
    expect(queries.join('&')).not.toMatch(/api_key|token|phone/);
  });

  it('logs each request exactly once, with its request id, route, method, status and duration', () => {
    for (const sent of calls) {
      const requestLines = lines.filter((line) => line.requestId === sent.requestId && line.status !== undefined);
      expect(requestLines).toHaveLength(1);
      const [line] = requestLines;
      expect(line).toMatchObject({ method: sent.method, status: sent.status, level: sent.status >= 500 ? 'warn' : 'info' });
      expect(typeof line.durationMs).toBe('number');
      expect(typeof line.route).toBe('string');
    }
    const filterLines = lines.filter((line) => line.route === '/api/v1/filter' && line.status === 200);
    expect(filterLines).toHaveLength(3);
    expect(lines.find((line) => line.requestId === calls.find((c) => c.path.startsWith('/api/v1/filter/%2B'))!.requestId)).toMatchObject({ route: '(unmatched)' });
  });

  it('names the account on authenticated requests only', () => {
    for (const sent of calls) {
      const line = lines.find((candidate) => candidate.requestId === sent.requestId && candidate.status !== undefined)!;
      // 401: the key did not authenticate; 404: no route, so no guard ran.
      if (sent.authenticated && sent.status !== 401 && sent.status !== 404) expect(line.accountId).toBe(accountId);
      else expect(line.accountId).toBeUndefined();
    }
  });

  it('ties messages logged while serving a request to its request id', () => {
    const failed = calls.find((sent) => sent.status === 503)!;
    const related = lines.filter((line) => line.requestId === failed.requestId);
    expect(related.map((line) => line.msg)).toEqual(expect.arrayContaining([expect.stringMatching(/lookup of \+44740012\*\*\*\* failed/)]));
  });

  it('logs the shutdown', () => {
    expect(lines.map((line) => line.msg)).toEqual(expect.arrayContaining([expect.stringMatching(/SIGTERM: shutting down/), 'Stopped']));
  });
});
