import SwaggerParser from '@apidevtools/swagger-parser';
import type { OpenAPIObject } from '@nestjs/swagger';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { withoutAdminApi } from './swagger';

/** The committed document: the whole contract, the admin API included. */
const committed = (): OpenAPIObject => JSON.parse(readFileSync(join(__dirname, '..', '..', 'openapi.json'), 'utf8')) as OpenAPIObject;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const operationsOf = (document: OpenAPIObject) =>
  Object.entries(document.paths).flatMap(([path, item]) => METHODS.filter((method) => item[method]).map((method) => `${method.toUpperCase()} ${path}`));

describe('the document Swagger UI serves without ADMIN_TOKEN (withoutAdminApi)', () => {
  it('lists no admin operation, tag or scheme, and every other operation as it was', () => {
    const full = committed();
    const served = withoutAdminApi(full);
    const admin = operationsOf(full).filter((operation) => operation.includes(' /admin/'));
    expect(admin.length).toBeGreaterThanOrEqual(13);
    expect(operationsOf(served)).toEqual(operationsOf(full).filter((operation) => !admin.includes(operation)));
    expect(served.tags?.map((tag) => tag.name)).not.toContain('admin');
    expect(Object.keys(served.components?.securitySchemes ?? {})).toEqual(['api-key']);
    expect(served.info.description).toContain('The admin API (`/admin/v1`) is off in this deployment');
    expect(served.info.description).not.toContain('they answer 404');
  });

  it('keeps the schemas the rest refers to and drops the admin API\'s own; what is left is a valid document', async () => {
    const served = withoutAdminApi(committed());
    const kept = Object.keys(served.components?.schemas ?? {});
    // Shared with the customer API: kept. The admin API's own: gone.
    expect(kept).toEqual(expect.arrayContaining(['Error', 'FilterRequestDto', 'UsagePageDto', 'WebhookSecretRotationDto']));
    for (const adminOnly of ['CreateAccountDto', 'AccountDto', 'PlanDto', 'AuditPageDto', 'ErasureDto']) expect(kept).not.toContain(adminOnly);
    // Every $ref left resolves.
    await expect(SwaggerParser.validate(structuredClone(served) as never)).resolves.toBeDefined();
  });

  it('leaves the full document alone', () => {
    const full = committed();
    const before = JSON.stringify(full);
    withoutAdminApi(full);
    expect(JSON.stringify(full)).toBe(before);
  });
});
