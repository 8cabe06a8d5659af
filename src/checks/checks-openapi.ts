import type { OpenAPIObject } from '@nestjs/swagger';
import type { CheckDefinition } from './check-definition';
import type { CheckRegistry } from './check-registry';
import { csvHeader } from './csv-layout';
import { RISK_VERDICT } from './priced-calls';

/** The schemas whose properties are the registered checks (the classes declare none: the registry does). */
export const CHECK_SWITCH_SCHEMAS = { settings: 'ChecksDto', patch: 'ChecksPatchDto', admin: 'AccountChecksDto' } as const;

/** The schemas whose properties are the checks that declare options, each an object of its options. */
export const CHECK_OPTION_SCHEMAS = { settings: 'CheckOptionsDto', patch: 'CheckOptionsPatchDto' } as const;

/** Schema properties that name a watched field (a watchlist change's `field`): their enum is the registry's. */
export const WATCHED_FIELD_PROPERTIES = [{ schema: 'WatchlistChangeDto', property: 'field' }] as const;

/**
 * Completes the OpenAPI document from the registry: the check-switch schemas, and the prose written with
 * placeholders (`{{checks.table}}`, `{{checks.default_prices}}`, `{{checks.csv_header}}`,
 * `{{checks.watched_fields}}`, `{{checks.risk_verdict_price}}`), so that prices, columns and fields are stated once, in the definitions.
 * Prices are the defaults: the document is the same for every deployment (GET /api/v1/settings tells
 * this deployment's cost).
 */
export function describeChecks(document: OpenAPIObject, registry: CheckRegistry): void {
  const checks = registry.all();
  const schemas = (document.components ??= {}).schemas ?? {};
  const names = checks.map((check) => check.name);
  schemas[CHECK_SWITCH_SCHEMAS.settings] = {
    type: 'object',
    required: names,
    properties: Object.fromEntries(
      checks.map((check) => [check.name, { type: 'boolean', example: check.defaultEnabled, description: `${check.title} (${filledFields(check)}). Default ${check.defaultEnabled ? 'on' : 'off'}; ${credits(check)} by default.` }]),
    ),
  };
  schemas[CHECK_SWITCH_SCHEMAS.patch] = {
    type: 'object',
    properties: Object.fromEntries(checks.map((check) => [check.name, { type: 'boolean', example: true, description: `${check.title} (${filledFields(check)}); ${credits(check)} by default.` }])),
  };
  schemas[CHECK_SWITCH_SCHEMAS.admin] = { type: 'object', required: names, properties: Object.fromEntries(checks.map((check) => [check.name, { type: 'boolean' }])) };

  const withOptions = checks.filter((check) => (check.options ?? []).length > 0);
  const optionsOf = (check: CheckDefinition, patch: boolean) => ({
    type: 'object',
    description: `The options of ${check.title} (\`${check.name}\`).`,
    ...(patch ? {} : { required: check.options!.map((option) => option.name) }),
    properties: Object.fromEntries(
      check.options!.map((option) => [
        option.name,
        { type: 'integer', format: 'int32', minimum: option.min, maximum: option.max, example: option.default, ...(patch ? { nullable: true } : {}), description: `${option.description} Default ${option.default}.` },
      ]),
    ),
  });
  schemas[CHECK_OPTION_SCHEMAS.settings] = {
    type: 'object',
    required: withOptions.map((check) => check.name),
    properties: Object.fromEntries(withOptions.map((check) => [check.name, optionsOf(check, false)])),
  };
  schemas[CHECK_OPTION_SCHEMAS.patch] = { type: 'object', properties: Object.fromEntries(withOptions.map((check) => [check.name, optionsOf(check, true)])) };

  const watched = registry.watchedFields();
  for (const { schema, property } of WATCHED_FIELD_PROPERTIES) {
    const target = (schemas[schema] as { properties?: Record<string, { enum?: unknown[] }> } | undefined)?.properties?.[property];
    if (target) target.enum = watched;
  }
  const texts: Record<string, string> = {
    '{{checks.table}}': checksTable(checks),
    '{{checks.default_prices}}': `${checks.map((check) => `${check.name.replace(/_/g, ' ')} ${check.price.default}`).join(', ')} credits`,
    '{{checks.csv_header}}': csvHeader(registry.csvLayout(Object.fromEntries(names.map((name) => [name, true])))).join(','),
    '{{checks.watched_fields}}': `${watched.slice(0, -1).join(', ')} or ${watched[watched.length - 1]}`,
    '{{checks.risk_verdict_price}}': `${RISK_VERDICT.price.default} (${RISK_VERDICT.price.variable})`,
  };
  replaceTexts(document, texts);
}

/** The answer fields a check fills: /filter's it shows, then those it reports beyond them. */
export function fieldsItFills(check: CheckDefinition): string[] {
  return [...Object.keys(check.shows), ...check.reports];
}

function filledFields(check: CheckDefinition): string {
  return fieldsItFills(check).join(', ');
}

function credits(check: CheckDefinition): string {
  return `${check.price.default} credit${check.price.default === 1 ? '' : 's'}`;
}

function checksTable(checks: readonly CheckDefinition[]): string {
  return (
    '| check | key | default | credits per call (default price) | fields it fills |\n' +
    '|---|---|---|---|---|\n' +
    checks.map((check) => `| ${check.title} | \`${check.name}\` | ${check.defaultEnabled ? 'on' : 'off'} | ${check.price.default} | ${filledFields(check)} |\n`).join('') +
    '\nA call costs the sum of its enabled checks. Prices are set per deployment; `cost_per_call` is the cost here.'
  );
}

/** Every string of the document with its placeholders replaced, in place. */
function replaceTexts(node: unknown, texts: Record<string, string>): void {
  if (node === null || typeof node !== 'object') return;
  const container = node as Record<string, unknown>;
  for (const [key, value] of Object.entries(container)) {
    if (typeof value === 'string' && value.includes('{{checks.')) {
      container[key] = Object.entries(texts).reduce((text, [placeholder, replacement]) => text.split(placeholder).join(replacement), value);
    } else {
      replaceTexts(value, texts);
    }
  }
}
