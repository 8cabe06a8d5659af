import fc from 'fast-check';
import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { startTestApp, TestApp } from './helpers/test-app';

const ADMIN_TOKEN = 'fuzz-admin-token-0123456789';

interface Route {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
}

/** Every documented route (so routes added later are swept too), plus a few that do not exist. */
async function discoverRoutes(t: TestApp): Promise<Route[]> {
  const doc = (await request(t.http).get('/docs-json').expect(200)).body as { paths: Record<string, Record<string, unknown>> };
  const documented = Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.keys(operations).map((method) => ({ method: method as Route['method'], path })),
  );
  return [...documented, { method: 'get', path: '/api/v1/nope' }, { method: 'post', path: '/' }, { method: 'delete', path: '/api/v1/balance' }];
}

const hugeString = fc.integer({ min: 1, max: 200_000 }).map((n) => 'x'.repeat(n));
const deepNesting = fc.integer({ min: 50, max: 5000 }).map((depth) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth));
const jsonValue = fc.oneof(fc.jsonValue({ maxDepth: 4 }), hugeString, fc.constant(null));
const bodyForFields = fc.dictionary(
  fc.constantFrom('phone', 'phones', 'source', 'checks', 'name', 'plan', 'credits', 'amount', 'reason', 'limit', 'window_seconds', 'callback_url', 'disabled', '__proto__', 'constructor'),
  jsonValue,
);
const rawBody = fc.oneof(
  bodyForFields.map((value) => ({ type: 'application/json', data: JSON.stringify(value) as string | Buffer })),
  fc.jsonValue().map((value) => ({ type: 'application/json', data: JSON.stringify(value) ?? 'null' })),
  deepNesting.map((data) => ({ type: 'application/json', data })),
  fc.string().map((data) => ({ type: 'application/json', data })),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((bytes) => ({ type: 'application/json; charset=utf-8', data: Buffer.from([0x7b, 0x22, ...bytes, 0xff, 0xfe]) })),
  fc.constantFrom('text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml', 'application/json; charset=latin-9').map((type) => ({ type, data: 'phone=%2B14155552671' })),
);
const pathParam = fc.oneof(fc.uuid(), fc.string({ maxLength: 40 }), fc.constantFrom('0', '-1', '..', '%00', 'free', 'enterprise'));
const query = fc.dictionary(fc.constantFrom('limit', 'cursor', 'x'), fc.oneof(fc.string(), fc.integer().map(String)), { maxKeys: 2 });

describe('bad-input sweep: no input makes a 500, every error has the contract shape', () => {
  let t: TestApp;
  let account: TestAccount;
  let routes: Route[];

  beforeAll(async () => {
    // A high per-address limit: the sweep sends many unauthenticated requests and must keep reaching validation.
    t = await startTestApp({ ADMIN_TOKEN, IP_RATE_LIMIT: '100000' });
    account = await createAccount(t, { credits: 1_000_000, plan: 'enterprise' });
    routes = await discoverRoutes(t);
  });
  afterAll(() => t.close());

  it('sweeps every route with at least 300 generated malformed requests', async () => {
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.nat(),
        fc.constantFrom('customer', 'admin', 'none', 'garbage'),
        pathParam,
        query,
        fc.option(rawBody, { nil: undefined }),
        async (routeIndex, auth, param, params, body) => {
          const route = routes[routeIndex % routes.length];
          const path = route.path.replace(/\{[^}]+\}/g, encodeURIComponent(param));
          const req = request(t.http)[route.method](path).query(params);
          if (auth === 'customer') req.set('Authorization', `Bearer ${account.apiKey}`);
          if (auth === 'admin') req.set('Authorization', `Bearer ${ADMIN_TOKEN}`);
          if (auth === 'garbage') req.set('Authorization', 'Bearer \u00ff\u0000x');
          if (body) req.set('Content-Type', body.type).send(body.data);
          const res = await req.catch((error: Error) => error);
          sent++;
          if (res instanceof Error) throw new Error(`${route.method.toUpperCase()} ${path}: ${res.message}`);
          expect({ route: `${route.method} ${path}`, status: res.status }).not.toEqual({ route: `${route.method} ${path}`, status: 500 });
          if (res.status >= 400) {
            expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
            expect(Object.keys(res.body)).toEqual(['error']);
            expect(typeof res.body.error.code).toBe('string');
            expect(typeof res.body.error.message).toBe('string');
          }
        },
      ),
      { numRuns: 300, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31), verbose: 1 },
    );
    expect(sent).toBeGreaterThanOrEqual(300);
    expect(routes.length).toBeGreaterThanOrEqual(5);
  });
});
