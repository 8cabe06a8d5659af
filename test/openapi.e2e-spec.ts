import SwaggerParser from '@apidevtools/swagger-parser';
import type { OpenAPIObject, OperationObject, ReferenceObject, ResponseObject, SchemaObject } from '@nestjs/swagger';
import type { Express } from 'express';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import request from 'supertest';
import { OPENAPI_PATH, serializeOpenApi, STALE_MESSAGE } from '../tools/openapi';
import { createAccount } from './factories/accounts';
import { ROOT } from './helpers/service-process';
import { startTestApp, TestApp } from './helpers/test-app';
import { LOGGING_MIDDLEWARE_PATH } from '../src/metrics/route-label';

type MediaType = { schema?: SchemaObject | ReferenceObject; example?: unknown; examples?: Record<string, unknown> };
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

describe('the OpenAPI document (/docs-json)', () => {
  let t: TestApp;
  let served: OpenAPIObject;

  beforeAll(async () => {
    t = await startTestApp({ ADMIN_TOKEN: 'openapi-test-admin-token' });
    const res = await request(t.http).get('/docs-json').expect(200);
    served = res.body as OpenAPIObject;
  });
  afterAll(() => t?.close());

  const operations = () =>
    Object.entries(served.paths).flatMap(([path, item]) =>
      METHODS.filter((method) => item[method]).map((method) => ({ path, method, operation: item[method] as OperationObject })),
    );

  it('is a valid OpenAPI 3 document', async () => {
    const parsed = await SwaggerParser.validate(structuredClone(served) as never);
    expect((parsed as { openapi?: string }).openapi).toMatch(/^3\./);
  });

  it('equals the committed openapi.json, but for its server: the address it was fetched from (Try it out calls it)', () => {
    expect(served.servers).toEqual([{ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/), description: expect.any(String) }]);
    const fresh = serializeOpenApi({ ...served, servers: (JSON.parse(readFileSync(OPENAPI_PATH, 'utf8')) as OpenAPIObject).servers });
    const committed = readFileSync(OPENAPI_PATH, 'utf8');
    if (fresh !== committed) {
      const freshLines = fresh.split('\n');
      const committedLines = committed.split('\n');
      const line = freshLines.findIndex((text, index) => text !== committedLines[index]);
      throw new Error(
        `${STALE_MESSAGE}\n  first difference at line ${line + 1}:\n  committed: ${committedLines[line]}\n  served:    ${freshLines[line]}`,
      );
    }
  });

  it('documents every route the app serves, and nothing else', () => {
    const router = (t.app.getHttpAdapter().getInstance() as Express).router as unknown as {
      stack: { route?: { path: string; methods: Record<string, boolean> } }[];
    };
    const servedRoutes = router.stack
      // Nest mounts module middleware (request logging) as a catch-all route: not an endpoint.
      .filter((layer) => layer.route && !layer.route.path.startsWith('/docs') && layer.route.path !== `/${LOGGING_MIDDLEWARE_PATH}`)
      .flatMap((layer) =>
        Object.keys(layer.route!.methods)
          .filter((method) => method !== '_all')
          .map((method) => `${method.toUpperCase()} ${layer.route!.path.replace(/:(\w+)/g, '{$1}')}`),
      );
    const documented = operations().map(({ path, method }) => `${method.toUpperCase()} ${path}`);
    expect(servedRoutes.length).toBeGreaterThan(10);
    expect([...new Set(documented)].sort()).toEqual([...new Set(servedRoutes)].sort());
  });

  it('gives every route at least one error response with the Error schema, each code with an example', () => {
    const missing: string[] = [];
    for (const { path, method, operation } of operations()) {
      const errors = Object.entries(operation.responses).filter(([status]) => Number(status) >= 400);
      const withErrorSchema = errors.filter(([, response]) => errorMedia(response as ResponseObject));
      if (withErrorSchema.length === 0) missing.push(`${method.toUpperCase()} ${path}`);
      for (const [status, response] of withErrorSchema) {
        const examples = errorMedia(response as ResponseObject)!.examples ?? {};
        expect(Object.keys(examples).length).toBeGreaterThan(0);
        for (const [code, example] of Object.entries(examples)) {
          expect({ route: `${method} ${path} ${status}`, body: (example as { value: unknown }).value }).toEqual({
            route: `${method} ${path} ${status}`,
            body: { error: { code, message: expect.any(String) } },
          });
        }
      }
    }
    expect(missing).toEqual([]);
    const errorSchema = served.components?.schemas?.Error as SchemaObject;
    expect(errorSchema.required).toEqual(['error']);
  });

  it('declares the two bearer schemes, and every /api/v1 route uses api-key and every /admin/v1 route admin-token', () => {
    expect(served.components?.securitySchemes).toMatchObject({
      'api-key': { type: 'http', scheme: 'bearer' },
      'admin-token': { type: 'http', scheme: 'bearer' },
    });
    for (const { path, operation } of operations()) {
      const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
      if (path.startsWith('/api/v1/')) expect({ path, schemes }).toEqual({ path, schemes: ['api-key'] });
      else if (path.startsWith('/admin/v1/')) expect({ path, schemes }).toEqual({ path, schemes: ['admin-token'] });
      else expect({ path, schemes }).toEqual({ path, schemes: [] });
    }
  });

  it('documents 401 and 429 (with Retry-After) and the RateLimit-* headers on every /api/v1 route', () => {
    const customer = operations().filter(({ path }) => path.startsWith('/api/v1/'));
    expect(customer.length).toBeGreaterThanOrEqual(4);
    for (const { path, method, operation } of customer) {
      const route = `${method.toUpperCase()} ${path}`;
      const responses = operation.responses as Record<string, ResponseObject>;
      expect({ route, codes: Object.keys(errorMedia(responses['401'])?.examples ?? {}) }).toEqual({
        route,
        codes: ['INVALID_API_KEY', 'REVOKED_API_KEY'],
      });
      expect({ route, headers: Object.keys(responses['429']?.headers ?? {}) }).toEqual({ route, headers: expect.arrayContaining(['Retry-After']) });
      const success = Object.entries(responses).filter(([status]) => status.startsWith('2'));
      expect(success.length).toBeGreaterThan(0);
      for (const [, response] of success) {
        expect({ route, headers: Object.keys(response.headers ?? {}) }).toEqual({
          route,
          headers: expect.arrayContaining(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']),
        });
      }
    }
  });

  it('has request and response examples for every /api/v1 route', () => {
    const lacking: string[] = [];
    for (const { path, method, operation } of operations().filter(({ path }) => path.startsWith('/api/v1/'))) {
      const route = `${method.toUpperCase()} ${path}`;
      const body = operation.requestBody as { content?: Record<string, MediaType> } | undefined;
      if (body && !hasExample(body.content?.['application/json'])) lacking.push(`${route} request body`);
      for (const [status, response] of Object.entries(operation.responses as Record<string, ResponseObject>)) {
        const media = Object.values(response.content ?? {})[0] as MediaType | undefined; // JSON, or text/csv for downloads
        if (status.startsWith('2') && !hasExample(media)) {
          lacking.push(`${route} ${status}`);
        }
      }
    }
    expect(lacking).toEqual([]);
  });

  it('documents the Idempotency-Key header and the six fields of POST /api/v1/filter', () => {
    const filter = served.paths['/api/v1/filter'].post!;
    expect(filter.parameters).toContainEqual(expect.objectContaining({ in: 'header', name: 'Idempotency-Key', required: false }));
    const result = served.components?.schemas?.PhoneAnswerDto as SchemaObject;
    expect(Object.keys(result.properties ?? {}).sort()).toEqual(['carrier', 'country', 'is_ported', 'line_type', 'status', 'valid']);
  });

  it('passes Spectral (spectral:oas and the OWASP ruleset, .spectral.yaml) and Redocly (recommended, redocly.yaml) with no finding', async () => {
    // npm run openapi:lint, as CI runs it: either linter's error or warning exits non-zero. Run without
    // blocking: a spawnSync held this file's app (its pool, its probes) still for up to a minute on a
    // loaded machine, past DATABASE_CONNECT_TIMEOUT_MS, and the next test met 503 "database unreachable".
    const run = await promisify(execFile)('npm', ['run', '-s', 'openapi:lint'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 }).then(
      () => ({ status: 0, output: '' }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({ status: error.code ?? 1, output: `${error.stdout ?? ''}${error.stderr ?? ''}` }),
    );
    expect(run).toEqual({ status: 0, output: '' });
  }, 120_000);

  it('documents 429 RATE_LIMITED (with Retry-After) on every /admin/v1 route, and the RateLimit-* headers on every 401', () => {
    for (const { path, method, operation } of operations()) {
      const route = `${method.toUpperCase()} ${path}`;
      const responses = operation.responses as Record<string, ResponseObject>;
      if (path.startsWith('/admin/v1/')) {
        expect({ route, codes: Object.keys(errorMedia(responses['429'])?.examples ?? {}) }).toEqual({ route, codes: ['RATE_LIMITED'] });
        expect({ route, headers: Object.keys(responses['429'].headers ?? {}) }).toEqual({ route, headers: expect.arrayContaining(['Retry-After', 'RateLimit-Reset']) });
      }
      if (responses['401']) {
        expect({ route, headers: Object.keys(responses['401'].headers ?? {}) }).toEqual({
          route,
          headers: expect.arrayContaining(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']),
        });
      }
    }
  });

  it('a 401 carries the failed-authentication limit\'s RateLimit-* headers, as documented (API key and admin token)', async () => {
    const wrongKey = await request(t.http).get('/api/v1/balance').set('Authorization', 'Bearer pf_live_wrongwrongwrongwrongwrongwrong12').expect(401);
    const wrongToken = await request(t.http).get('/admin/v1/plans').set('Authorization', 'Bearer not-the-admin-token').expect(401);
    for (const response of [wrongKey, wrongToken]) {
      expect(Number(response.headers['ratelimit-limit'])).toBeGreaterThan(0);
      expect(Number(response.headers['ratelimit-remaining'])).toBeLessThan(Number(response.headers['ratelimit-limit']));
      expect(Number(response.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(1);
    }
  });

  it('documents errors as JSON on every route, the CSV results included (their 404 is JSON, as served)', async () => {
    for (const { path, method, operation } of operations()) {
      for (const [status, response] of Object.entries(operation.responses as Record<string, ResponseObject>)) {
        if (Number(status) >= 400) expect({ route: `${method} ${path} ${status}`, types: Object.keys(response.content ?? {}) }).toEqual({ route: `${method} ${path} ${status}`, types: ['application/json'] });
      }
    }
    const account = await createAccount(t);
    const missing = await request(t.http).get('/api/v1/filter/bulk/6c1f4a52-3c0e-4a8e-9f3b-2b6f3f0c9a11/results.csv').set('Authorization', `Bearer ${account.apiKey}`).expect(404);
    expect(missing.headers['content-type']).toMatch(/^application\/json/);
  });

  it('declares every tag it uses, a server, and `security: []` on the routes without authentication', () => {
    const declared = (served.tags ?? []).map((tag) => tag.name);
    for (const { operation } of operations()) for (const tag of operation.tags ?? []) expect(declared).toContain(tag);
    expect(served.servers?.length).toBeGreaterThan(0);
    for (const path of ['/health/live', '/health/ready', '/metrics']) expect(served.paths[path].get!.security).toEqual([]);
    for (const scheme of Object.values(served.components?.securitySchemes ?? {})) expect(scheme).not.toMatchObject({ bearerFormat: 'JWT' });
  });

  /** An explicit example on the media type, or one on every property of the schema it references. */
  function hasExample(media: MediaType | undefined): boolean {
    if (!media) return false;
    if (media.example !== undefined || Object.keys(media.examples ?? {}).length > 0) return true;
    const ref = (media.schema as ReferenceObject | undefined)?.$ref;
    const schema = ref ? (served.components?.schemas?.[ref.split('/').pop()!] as SchemaObject | undefined) : (media.schema as SchemaObject);
    if (schema?.example !== undefined) return true;
    const properties = Object.values(schema?.properties ?? {}) as SchemaObject[];
    return properties.length > 0 && properties.every((property) => property.example !== undefined);
  }
});

function errorMedia(response: ResponseObject | undefined): MediaType | undefined {
  const media = response?.content?.['application/json'] as MediaType | undefined;
  return (media?.schema as ReferenceObject | undefined)?.$ref === '#/components/schemas/Error' ? media : undefined;
}
