/**
 * Writes the OpenAPI document of the service to openapi.json (`npm run openapi`), or checks that the
 * committed file is current (`npm run openapi -- --check`, exit 1 when stale).
 *
 * The app is created in Nest's preview mode: modules and controllers are scanned (all Swagger needs),
 * but no provider is instantiated, so no database, Redis or upstream is needed and nothing connects.
 * The configuration is the defaults only (never the caller's environment or .env), so the document is
 * the same on every machine. test/openapi.e2e-spec.ts checks that it equals the real app's /docs-json.
 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { AppModule } from '../src/app.module';
import { BUILT_IN_CHECKS } from '../src/checks/built-in-checks';
import { CheckRegistry } from '../src/checks/check-registry';
import { describeChecks } from '../src/checks/checks-openapi';
import { buildOpenApiDocument } from '../src/common/swagger';
import { AppConfig } from '../src/config/app-config';
import { validateEnvironment } from '../src/config/environment';

export const OPENAPI_PATH = resolve(__dirname, '..', 'openapi.json');
export const STALE_MESSAGE = 'openapi.json is stale: run npm run openapi';

/** The document exactly as /docs-json serves it, built without any running dependency. */
export async function generateOpenApiDocument(): Promise<OpenAPIObject> {
  const config = new AppConfig(validateEnvironment({}), 'postgres://openapi@127.0.0.1:1/never-connected');
  const app = await NestFactory.create(AppModule.forRoot(config), { preview: true, logger: false, bodyParser: false });
  try {
    // Preview mode instantiates no provider: the registry of the built-in checks, at their default prices.
    const checks = new CheckRegistry(BUILT_IN_CHECKS.map((definition) => ({ definition })));
    return buildOpenApiDocument(app, (document) => describeChecks(document, checks));
  } finally {
    await app.close();
  }
}

/** Keys sorted at every level, 2-space indent, trailing newline: the same document, the same bytes. */
export function serializeOpenApi(document: unknown): string {
  return `${JSON.stringify(sortKeys(document), null, 2)}\n`;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

function committed(): string | undefined {
  try {
    return readFileSync(OPENAPI_PATH, 'utf8');
  } catch {
    return undefined;
  }
}

async function main(argv: string[]): Promise<number> {
  const fresh = serializeOpenApi(await generateOpenApiDocument());
  if (argv.includes('--check')) {
    if (committed() === fresh) {
      console.log('openapi.json is current');
      return 0;
    }
    console.error(STALE_MESSAGE);
    return 1;
  }
  if (committed() === fresh) {
    console.log('openapi.json unchanged');
  } else {
    writeFileSync(OPENAPI_PATH, fresh);
    console.log(`wrote ${OPENAPI_PATH}`);
  }
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error('Could not build the OpenAPI document:', error);
      process.exit(1);
    },
  );
}
