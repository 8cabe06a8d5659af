import { INestApplication } from '@nestjs/common';
import type { Request } from 'express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import type { HeaderObject, OperationObject, ReferenceObject, ResponseObject } from '@nestjs/swagger';
import { CUSTOMER_API_ERRORS, documentedErrorCodes, ERROR_SCHEMA_REF, errorResponseContent, groupByStatus } from './api-errors.decorator';
import { ErrorCode, ERROR_CODES } from './errors';

const API_DESCRIPTION = `One synchronous call tells whether a phone number is well-formed and live, what line it is and whether it was ported, billed in credits.

**Authentication.** Every \`/api/v1\` route needs \`Authorization: Bearer <API_KEY>\` (click **Authorize**, scheme \`api-key\`). The \`/admin/v1\` routes need the deployment's \`ADMIN_TOKEN\` (scheme \`admin-token\`); without \`ADMIN_TOKEN\` they answer 404.

**Errors.** Every non-2xx response has the body \`{ "error": { "code", "message" } }\` (schema \`Error\`); the codes of each route are listed with its responses.

**Credits.** \`POST /api/v1/filter\` costs the sum of the prices of the checks enabled in the account settings (defaults: {{checks.default_prices}}; \`GET /api/v1/settings\` tells the cost with this deployment's prices). Requests refused before the credit step are never charged; a 503 \`PROVIDER_UNAVAILABLE\` is refunded. An optional \`daily_credit_limit\` caps what an account is charged per UTC day (402 \`SPENDING_LIMIT_REACHED\`), and \`low_balance_threshold\` with \`webhook_url\` sends a signed \`balance.low\` event when a charge crosses it.

**Freshness.** Answers are cached per number and check; \`Cache-Control: no-cache\` (or \`max-age=0\`) on \`POST /api/v1/filter\` looks the number up live, \`max-age=<seconds>\` refuses older cached answers (bulk jobs: \`max_age\`). Same price either way.

**Rate limits.** Per account and plan, across all keys and instances. Every \`/api/v1\` response after authentication carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`; a 429 carries \`Retry-After\`.`;

/** Headers of the document's responses, referenced from components.headers. */
const RESPONSE_HEADERS: Record<string, HeaderObject> = {
  'X-Request-Id': {
    description: "The request's id: the client's `X-Request-Id` when sane, otherwise a new UUID. Quote it when reporting a problem.",
    schema: { type: 'string', example: '3f6c1d2e-8a4b-4c55-9b1e-0f2a7d9c4e11' },
  },
  'RateLimit-Limit': {
    description: "Requests allowed per window: the account's plan (on a 401, the failed attempts allowed per address).",
    schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647, example: 50 },
  },
  'RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer', format: 'int32', minimum: 0, maximum: 2147483647, example: 49 } },
  'RateLimit-Reset': { description: 'Seconds until the current window ends.', schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 2147483647, example: 1 } },
  'Retry-After': {
    description: 'Whole seconds to wait before retrying (at least 1).',
    schema: { type: 'integer', format: 'int32', minimum: 1, maximum: 2147483647, example: 1 },
  },
};
const RATE_LIMIT_HEADERS = ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'];

/** `complete`: what the features add once the document is built (the checks' schemas and prose, src/checks/). */
export function buildOpenApiDocument(app: INestApplication, complete?: (document: OpenAPIObject) => void): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Phone Filter API')
    .setDescription(API_DESCRIPTION)
    .setVersion('1.0.0')
    // Both are opaque secrets, not JWTs (Nest's default bearerFormat would say JWT).
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'opaque', description: 'Your API key (pf_live_...)' }, 'api-key')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'opaque', description: 'The ADMIN_TOKEN of the deployment' }, 'admin-token')
    .addServer('http://localhost:3000', "local: npm start's default address; your deployment's own otherwise", undefined, { 'x-internal': false })
    .addTag('filter', 'Check phone numbers (charged in credits).')
    .addTag('settings', 'Which checks run on every call, and what a call costs.')
    .addTag('risk', 'A risk verdict before sending a one-time code (SMS pumping, SIM swap), and whether the code was verified.')
    .addTag('credits', 'Balance and the credits ledger.')
    .addTag('bulk', 'Up to 1,000 numbers in one job (JSON or CSV), with a quote first and Idempotency-Key.')
    .addTag('watchlists', 'Numbers checked again on a schedule, with the changes found (charged per round).')
    .addTag('events', 'Account events (balance.low, bulk.completed) sent to webhook_url, and their delivery state.')
    .addTag('health', 'Liveness and readiness probes (no authentication).')
    .addTag('operations', 'Prometheus metrics (no authentication: keep them on an internal network).')
    .addTag('admin', 'Accounts, keys, credits and plans, with the ADMIN_TOKEN.')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  document.components ??= {};
  document.components.schemas = {
    ...document.components.schemas,
    Error: {
      type: 'object',
      required: ['error'],
      additionalProperties: false,
      properties: {
        error: {
          type: 'object',
          required: ['code', 'message'],
          additionalProperties: false,
          properties: {
            code: { type: 'string', enum: [...ERROR_CODES] },
            message: { type: 'string', description: 'For people; may change. Branch on `code`.', example: 'phone must be in E.164 format, e.g. +447400123456' },
          },
        },
      },
    },
  };
  document.components.headers = { ...document.components.headers, ...RESPONSE_HEADERS };
  for (const pathItem of Object.values(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation = pathItem[method];
      if (operation) completeOperation(operation);
    }
  }
  complete?.(document);
  return document;
}

/**
 * What holds for every route of a kind, added here once rather than on each controller: any route can
 * answer 500 INTERNAL_ERROR (the one exception filter); /api/v1 routes also answer 401, 429 and 503
 * and carry the rate-limit headers after authentication; /admin/v1 routes answer 429 past the
 * failed-authentication limit; a 401 carries that limit's headers; every response carries X-Request-Id.
 * A route with no authentication says so (`security: []`), and an error is JSON whatever the route's
 * success content type.
 */
function completeOperation(operation: OperationObject): void {
  documentCsvBody(operation);
  operation.security ??= [];
  const customerApi = operation.security.some((requirement) => 'api-key' in requirement);
  const adminApi = operation.security.some((requirement) => 'admin-token' in requirement);
  const required: ErrorCode[] = customerApi ? CUSTOMER_API_ERRORS : adminApi ? ['RATE_LIMITED', 'INTERNAL_ERROR'] : ['INTERNAL_ERROR'];
  for (const [status, codes] of groupByStatus(required)) {
    const existing = operation.responses[status] as ResponseObject | undefined;
    const content = existing?.content?.['application/json'];
    if (existing && (content?.schema as ReferenceObject | undefined)?.$ref !== ERROR_SCHEMA_REF) continue;
    const merged = errorResponseContent([...documentedErrorCodes(content?.examples), ...codes]);
    operation.responses[status] = {
      ...existing,
      description: merged.description,
      content: { 'application/json': { schema: merged.schema, examples: merged.examples } },
    };
  }
  for (const [status, response] of Object.entries(operation.responses) as [string, ResponseObject][]) {
    jsonErrorsOnly(status, response);
    const names = ['X-Request-Id'];
    // 401 and an admin route's 429: the failed-authentication limit's window (per address).
    if (customerApi || ((status === '401' || status === '429') && adminApi)) names.push(...RATE_LIMIT_HEADERS);
    // 429, and a 409 NOT_READY: when to ask again.
    if (status === '429' || documentedErrorCodes(response.content?.['application/json']?.examples).includes('NOT_READY')) names.push('Retry-After');
    response.headers = {
      ...response.headers,
      ...Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }])),
    };
  }
}

/** `@ApiProduces('text/csv')` applies to every response: an error response is JSON all the same. */
function jsonErrorsOnly(status: string, response: ResponseObject): void {
  if (Number(status) < 400 || !response.content) return;
  const media = Object.values(response.content).find((entry) => (entry.schema as ReferenceObject | undefined)?.$ref === ERROR_SCHEMA_REF);
  if (media) response.content = { 'application/json': media };
}

/** Operation extension (set with `@ApiExtension(CSV_BODY_EXTENSION, { description, example })`): the route also takes a text/csv body. */
export const CSV_BODY_EXTENSION = 'x-csv-body';

/** @nestjs/swagger gives every content type of a body the same schema: a CSV body is text, with its own example. */
function documentCsvBody(operation: OperationObject): void {
  const extended = operation as OperationObject & Record<string, unknown>;
  const csv = extended[CSV_BODY_EXTENSION] as { description: string; example: string } | undefined;
  if (!csv) return;
  delete extended[CSV_BODY_EXTENSION];
  const body = operation.requestBody as { content: Record<string, unknown>; description?: string } | undefined;
  if (!body) return;
  body.content['text/csv'] = { schema: { type: 'string', description: csv.description }, example: csv.example };
}

/** The sentence of API_DESCRIPTION about the admin API, as the built document holds it. */
const ADMIN_SENTENCE = "The `/admin/v1` routes need the deployment's `ADMIN_TOKEN` (scheme `admin-token`); without `ADMIN_TOKEN` they answer 404.";

/**
 * The document less the admin API, for a deployment that runs without ADMIN_TOKEN: its routes answer 404
 * there, so Swagger UI does not list them (nor their tag, scheme and schemas). openapi.json keeps them:
 * it documents the whole contract, admin API included (docs/api.md).
 */
export function withoutAdminApi(document: OpenAPIObject): OpenAPIObject {
  const paths = Object.fromEntries(Object.entries(document.paths).filter(([path]) => !path.startsWith('/admin/')));
  const { 'admin-token': _adminToken, ...securitySchemes } = document.components?.securitySchemes ?? {};
  const trimmed: OpenAPIObject = {
    ...document,
    info: {
      ...document.info,
      description: document.info.description?.replace(ADMIN_SENTENCE, 'The admin API (`/admin/v1`) is off in this deployment (no `ADMIN_TOKEN`), so it is not listed here.'),
    },
    paths,
    tags: document.tags?.filter((tag) => tag.name !== 'admin'),
    components: { ...document.components, securitySchemes },
  };
  return { ...trimmed, components: { ...trimmed.components, schemas: referencedSchemas(trimmed) } };
}

/** The schemas the document still refers to, directly or through other schemas. */
function referencedSchemas(document: OpenAPIObject): NonNullable<OpenAPIObject['components']>['schemas'] {
  const schemas = document.components?.schemas ?? {};
  const prefix = '#/components/schemas/';
  const refsIn = (value: unknown): string[] =>
    [...JSON.stringify(value).matchAll(/"\$ref":"([^"]+)"/g)].map(([, ref]) => ref).filter((ref) => ref.startsWith(prefix)).map((ref) => ref.slice(prefix.length));
  const kept = new Set<string>();
  const pending = refsIn({ ...document, components: { ...document.components, schemas: {} } });
  for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
    if (kept.has(name) || !(name in schemas)) continue;
    kept.add(name);
    pending.push(...refsIn(schemas[name]));
  }
  return Object.fromEntries(Object.entries(schemas).filter(([name]) => kept.has(name)));
}

/** `adminApi`: ADMIN_TOKEN is set, so the admin routes answer, and are listed. */
export function setupSwagger(app: INestApplication, adminApi: boolean, complete?: (document: OpenAPIObject) => void): void {
  const document = () => buildOpenApiDocument(app, complete);
  SwaggerModule.setup('docs', app, adminApi ? document : () => withoutAdminApi(document()), {
    jsonDocumentUrl: 'docs-json',
    // The served document names the address it was fetched from as its server, so "Try it out" calls
    // this very service whatever its host and port (openapi.json keeps npm start's default).
    patchDocumentOnRequest: <TRequest>(req: TRequest, _res: unknown, document: OpenAPIObject): OpenAPIObject => {
      const request = req as unknown as Request;
      return { ...document, servers: [{ url: `${request.protocol}://${request.get('host') ?? 'localhost'}`, description: 'local: the address this document was fetched from' }] };
    },
    // Keys typed into Authorize live only as long as the page: persisted, they would sit in localStorage.
    swaggerOptions: { persistAuthorization: false },
  });
}
