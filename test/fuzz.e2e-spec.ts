import fc from 'fast-check';
import request from 'supertest';
import zlib from 'node:zlib';
import { createAccount, TestAccount } from './factories/accounts';
import { startTestApp, TestApp } from './helpers/test-app';

const ADMIN_TOKEN = 'fuzz-admin-token-0123456789';

interface Route {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  /** What the OpenAPI document says the route reads: its credential, body fields, query and path parameters. */
  auth?: 'customer' | 'admin';
  bodyFields?: string[];
  /** A body made of the documented examples of its fields: valid, so that the one field under test is what is refused. */
  bodyExample?: Record<string, unknown>;
  query?: string[];
  pathParams?: string[];
}

interface Operation {
  security?: Array<Record<string, unknown>>;
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: { content: Record<string, { schema: { $ref?: string } }> };
}

/** Every documented route (so routes added later are swept too), plus a few that do not exist. */
async function discoverRoutes(t: TestApp): Promise<Route[]> {
  const doc = (await request(t.http).get('/docs-json').expect(200)).body as {
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, { properties?: Record<string, { example?: unknown }> }> };
  };
  const documented = Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]): Route => {
      const ref = operation.requestBody?.content['application/json']?.schema.$ref;
      const security = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
      const properties = ref ? (doc.components.schemas[ref.split('/').pop()!].properties ?? {}) : undefined;
      return {
        method: method as Route['method'],
        path,
        auth: security.includes('admin-token') ? 'admin' : security.includes('api-key') ? 'customer' : undefined,
        bodyFields: properties && Object.keys(properties),
        bodyExample: properties && Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, property.example])),
        query: (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        pathParams: (operation.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
      };
    }),
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

  // Classes of hostile input, each sent to every documented route that reads that kind of input, with
  // the route's own credential, so that a route added later is held to the same rules (README "Security").

  /** A documented route, its path parameters filled with `param`, called with its own credential. */
  function call(route: Route, param: (name: string) => string = (name) => (name === 'name' ? 'free' : '00000000-0000-4000-8000-000000000000')) {
    const path = route.path.replace(/\{([^}]+)\}/g, (_, name: string) => encodeURIComponent(param(name)));
    const req = request(t.http)[route.method](path);
    if (route.auth === 'customer') req.set('Authorization', `Bearer ${account.apiKey}`);
    if (route.auth === 'admin') req.set('Authorization', `Bearer ${ADMIN_TOKEN}`);
    return req;
  }

  const controlCharacter = fc.integer({ min: 0, max: 0x1f }).map((code) => String.fromCharCode(code));
  const withControlCharacter = fc.tuple(fc.string({ maxLength: 8 }), controlCharacter, fc.string({ maxLength: 8 })).map((parts) => parts.join(''));

  it('refuses a control character in any body field, query or path parameter of any route: 400 naming it', async () => {
    const targets = routes.flatMap((route) => [
      ...(route.bodyFields ?? []).map((field) => ({ route, kind: 'body' as const, field })),
      ...(route.query ?? []).map((field) => ({ route, kind: 'query' as const, field })),
      ...(route.pathParams ?? []).map((field) => ({ route, kind: 'path' as const, field })),
    ]);
    expect(targets.length).toBeGreaterThanOrEqual(20);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...targets), withControlCharacter, fc.boolean(), async ({ route, kind, field }, value, nested) => {
        let req = call(route, (name) => (kind === 'path' && name === field ? value : name === 'name' ? 'free' : '00000000-0000-4000-8000-000000000000'));
        if (kind === 'query') req = req.query({ [field]: value });
        if (kind === 'body') req = req.send({ [field]: nested ? [{ inner: value }] : value });
        else if (route.bodyFields) req = req.send({});
        const res = await req;
        const sent = `${route.method} ${route.path} ${kind} ${field}`;
        expect({ sent, status: res.status, code: res.body.error?.code }).toEqual({ sent, status: 400, code: 'INVALID_REQUEST' });
        expect({ sent, message: res.body.error.message }).toEqual({ sent, message: expect.stringContaining(field) });
        expect({ sent, message: res.body.error.message }).toEqual({ sent, message: expect.stringContaining('control character') });
      }),
      { numRuns: 200, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
    );
  });

  it('refuses __proto__, constructor and prototype keys at any depth of any body: 400 unknown field', async () => {
    const withBody = routes.filter((route) => route.bodyFields);
    expect(withBody.length).toBeGreaterThanOrEqual(5);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...withBody),
        fc.constantFrom('__proto__', 'constructor', 'prototype'),
        fc.array(fc.constantFrom('checks', 'a', 'b'), { maxLength: 4 }),
        fc.boolean(),
        async (route, key, depthPath, inArray) => {
          // Written as JSON text: an object literal would not hold "__proto__" as a key of its own.
          let json = `{"${key}":{"polluted":true}}`;
          for (const name of [...depthPath].reverse()) json = `{"${name}":${inArray ? `[${json}]` : json}}`;
          const res = await call(route).set('Content-Type', 'application/json').send(json);
          const sent = `${route.method} ${route.path} ${json}`;
          expect({ sent, status: res.status, code: res.body.error?.code }).toEqual({ sent, status: 400, code: 'INVALID_REQUEST' });
          expect({ sent, message: res.body.error.message }).toEqual({ sent, message: expect.stringMatching(new RegExp(`unknown field ".*${key}"`)) });
        },
      ),
      { numRuns: 150, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
    );
  });

  it('answers every Content-Encoding, with any bytes, without a 500: a body that is not what it says is a 400', async () => {
    const decompress: Partial<Record<string, (data: Buffer) => Buffer>> = { gzip: zlib.gunzipSync, deflate: zlib.inflateSync, br: zlib.brotliDecompressSync };
    const decodes = (encoding: string, data: Buffer): boolean => {
      try {
        decompress[encoding.toLowerCase()]?.(data);
        return true;
      } catch {
        return false;
      }
    };
    const withBody = routes.filter((route) => route.bodyFields);
    const compress: Partial<Record<string, (data: Buffer) => Buffer>> = { gzip: zlib.gzipSync, deflate: zlib.deflateSync, br: zlib.brotliCompressSync };
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...withBody),
        fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'compress', 'zstd', 'x-unknown', 'gzip, br', 'GZIP'),
        fc.oneof(
          fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ kind: 'garbage', data: Buffer.from(bytes) })),
          fc.jsonValue({ maxDepth: 3 }).map((value) => ({ kind: 'encoded', data: Buffer.from(JSON.stringify(value) ?? 'null') })),
          fc.jsonValue({ maxDepth: 3 }).map((value) => ({ kind: 'truncated', data: Buffer.from(JSON.stringify({ value })) })),
        ),
        async (route, encoding, body) => {
          const encoder = compress[encoding.toLowerCase()];
          let data = body.kind !== 'garbage' && encoder ? encoder(body.data) : body.data;
          if (body.kind === 'truncated' && encoder) data = data.subarray(0, Math.max(1, data.length - 4));
          const res = await call(route)
            .set({ 'Content-Type': 'application/json', 'Content-Encoding': encoding })
            .serialize((raw: unknown) => raw as string)
            .send(data);
          const sent = `${route.method} ${route.path} ${encoding} ${body.kind}`;
          expect({ sent, status: res.status >= 500 ? res.status : 'not 5xx' }).toEqual({ sent, status: 'not 5xx' });
          if (res.status >= 400) expect(Object.keys(res.body)).toEqual(['error']);
          // Random bytes can still be a valid stream (one byte, 0x37, is an empty brotli stream): those are no garbage.
          if (body.kind === 'garbage' && encoder && data.length > 0 && !decodes(encoding, data)) expect({ sent, status: res.status }).toEqual({ sent, status: 400 });
        },
      ),
      { numRuns: 200, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
    );
  });

  it('refuses a URL field on any non-global address, in every IPv6 spelling of an internal IPv4, and charges nothing', async () => {
    const urlFields = routes.flatMap((route) => (route.bodyFields ?? []).filter((field) => field.endsWith('_url')).map((field) => ({ route, field })));
    expect(urlFields.length).toBeGreaterThanOrEqual(1);
    const internalV4 = fc.oneof(
      fc.tuple(fc.constant(127), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(10), fc.nat(255), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(169), fc.constant(254), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(192), fc.constant(168), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(172), fc.integer({ min: 16, max: 31 }), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(100), fc.integer({ min: 64, max: 127 }), fc.nat(255), fc.nat(255)),
      fc.tuple(fc.constant(0), fc.nat(255), fc.nat(255), fc.nat(255)),
    );
    const hex = (a: number, b: number, flip = 0) => (((a << 8) | b) ^ flip).toString(16);
    const ipv6Forms = internalV4.chain(([a, b, c, d]) =>
      fc.constantFrom(
        `[::ffff:${a}.${b}.${c}.${d}]`,
        `[::ffff:${hex(a, b)}:${hex(c, d)}]`,
        `[::${a}.${b}.${c}.${d}]`,
        `[::ffff:0:${a}.${b}.${c}.${d}]`,
        `[64:ff9b::${a}.${b}.${c}.${d}]`,
        `[64:ff9b:1::${hex(a, b)}:${hex(c, d)}]`,
        `[2002:${hex(a, b)}:${hex(c, d)}::1]`,
        `[2001:0:4136:e378:8000:63bf:${hex(a, b, 0xffff)}:${hex(c, d, 0xffff)}]`,
        `${a}.${b}.${c}.${d}`,
        String(((a << 24) >>> 0) + (b << 16) + (c << 8) + d),
      ),
    );
    const otherNonGlobal = fc.constantFrom('[::1]', '[::]', '[fd00::1]', '[fe80::1]', '[fe80::1%25eth0]', '[ff02::1]', '[2001:db8::1]', '[100::1]', 'localhost', 'a.localhost.');
    const before = (await request(t.http).get('/api/v1/balance').set('Authorization', `Bearer ${account.apiKey}`)).body.balance as number;
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...urlFields), fc.oneof(ipv6Forms, otherNonGlobal), fc.constantFrom('http', 'https'), async ({ route, field }, host, scheme) => {
        const url = `${scheme}://${host}:8080/hook`;
        const res = await call(route).send({ ...route.bodyExample, [field]: url });
        expect({ url, status: res.status, code: res.body.error?.code }).toEqual({ url, status: 400, code: 'INVALID_REQUEST' });
        // Refused as not public, or (a bare 32-bit number for a host) as not a URL at all: never accepted.
        expect({ url, message: res.body.error.message }).toEqual({ url, message: expect.stringMatching(new RegExp(`${field} must (point to a public address|be an http)`)) });
      }),
      { numRuns: 150, seed: Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31) },
    );
    expect((await request(t.http).get('/api/v1/balance').set('Authorization', `Bearer ${account.apiKey}`)).body.balance).toBe(before);
  });
});
