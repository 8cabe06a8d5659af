import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { BUILT_IN_CHECKS } from '../../src/checks/built-in-checks';
import type { CheckDefinition } from '../../src/checks/check-definition';
import { CheckRegistry } from '../../src/checks/check-registry';
import { fieldsItFills } from '../../src/checks/checks-openapi';
import { checkOptionsOf } from '../../src/checks/check-options';
import { environmentReference, ReferenceSection, ReferenceVariable } from '../../src/config/environment-reference';
import { providerEnvPrefix } from '../../src/config/lookup-providers';
import { UPSTREAM_ADAPTERS, UpstreamAdapter } from '../../src/config/upstream-adapters';
import { DEFAULT_DESTINATION_ENTRIES } from '../../src/risk/destination-defaults';
import { REASON_CODES } from '../../src/risk/reasons';
import { RISK_THRESHOLDS } from '../../src/settings/risk-settings';

/**
 * The parts of the documentation that restate the code: the checks (names, prices, cache lifetimes,
 * fields, watched fields), the adapters and what each needs, and every environment variable. Each is
 * written here from the check definitions, the adapters' descriptors and the environment schema, into
 * regions of the Markdown marked `<!-- generated: NAME … -->` … `<!-- /generated: NAME -->` (prose
 * may move around a region; a region is rewritten whole), and into .env.example whole.
 */
export interface DocSources {
  readonly checks: readonly CheckDefinition[];
  readonly adapters: readonly UpstreamAdapter[];
  readonly environment: readonly ReferenceSection[];
}

/** What the service registers: the built-in checks (or the ones given), the adapters, the schema. */
export function docSources(checks: readonly CheckDefinition[] = BUILT_IN_CHECKS): DocSources {
  return { checks, adapters: UPSTREAM_ADAPTERS, environment: environmentReference(checks) };
}

interface Region {
  /** Where a reader changes what the region says. */
  readonly source: string;
  /** The region's Markdown; `arg` is the word after the name, `file` the document's path from the repository root. */
  render(sources: DocSources, arg: string | undefined, file: string): string;
}

const REGIONS: Record<string, Region> = {
  checks: { source: 'src/checks/built-in-checks.ts', render: checksTable },
  'settings-example': { source: 'src/checks/built-in-checks.ts', render: settingsExample },
  'watched-fields': { source: 'src/checks/built-in-checks.ts', render: watchedFields },
  adapters: { source: 'src/config/upstream-adapters.ts', render: adaptersTable },
  adapter: { source: 'src/config/upstream-adapters.ts', render: adapterSettings },
  'env-reference': { source: 'src/config/environment.ts and the checks', render: environmentTables },
  'env-section': { source: 'src/config/environment.ts', render: (sources, arg) => variablesTable(section(sources, arg).variables) },
  'risk-reasons': { source: 'src/risk/reasons.ts', render: riskReasons },
  'risk-thresholds': { source: 'src/settings/risk-settings.ts', render: riskThresholds },
  'risk-destinations': { source: 'src/risk/destination-defaults.ts', render: riskDestinations },
};

const START = /^<!-- generated: ([a-z-]+)(?: ([a-z0-9-]+))? .*-->\s*$/;

export class GeneratedRegionError extends Error {}

/** A document with each of its generated regions written again from `sources`; the rest unchanged. */
export function regenerate(text: string, sources: DocSources, file: string): string {
  const lines = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const start = START.exec(lines[i]);
    if (!start) {
      if (lines[i].startsWith('<!-- /generated:')) throw new GeneratedRegionError(`${file}:${i + 1}: the end of a generated region that did not start`);
      out.push(lines[i]);
      continue;
    }
    const [, name, arg] = start;
    const region = REGIONS[name];
    if (!region) throw new GeneratedRegionError(`${file}:${i + 1}: no generated region is called "${name}" (${Object.keys(REGIONS).join(', ')})`);
    const end = lines.indexOf(endMarker(name), i + 1);
    if (end < 0) throw new GeneratedRegionError(`${file}:${i + 1}: the generated region "${name}" has no end line ${endMarker(name)}`);
    out.push(startMarker(name, arg, region.source), '', region.render(sources, arg, file), '', endMarker(name));
    i = end;
  }
  return out.join('\n');
}

function startMarker(name: string, arg: string | undefined, source: string): string {
  return `<!-- generated: ${[name, arg].filter(Boolean).join(' ')} (npm run docs writes this part from ${source}: edit there, not here) -->`;
}

function endMarker(name: string): string {
  return `<!-- /generated: ${name} -->`;
}

/** Every generated file under `root` as it should be: the Markdown documents that hold regions, and .env.example. */
export function generatedFiles(root: string, sources: DocSources): Map<string, string> {
  const files = new Map<string, string>();
  const documents = ['README.md', ...readdirSync(join(root, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];
  for (const file of documents.sort()) {
    const text = readFileSync(join(root, file), 'utf8');
    if (text.split('\n').some((line) => START.test(line))) files.set(file, regenerate(text, sources, file));
  }
  files.set('.env.example', envExample(sources));
  return files;
}

/** The generated files whose committed text differs from what `sources` give. */
export function staleFiles(root: string, sources: DocSources): string[] {
  const stale: string[] = [];
  for (const [file, text] of generatedFiles(root, sources)) {
    let committed: string | undefined;
    try {
      committed = readFileSync(join(root, file), 'utf8');
    } catch {
      committed = undefined;
    }
    if (committed !== text) stale.push(file);
  }
  return stale.sort();
}

// ---- the regions

function checksTable({ checks }: DocSources, _arg: string | undefined, file: string): string {
  const prices = checks.map((check) => check.price.default);
  const rows = checks.map((check) => [
    check.title,
    code(check.name),
    check.defaultEnabled ? 'on' : 'off',
    String(check.price.default),
    duration(check.cacheTtlSeconds.default),
    fieldsItFills(check).map(code).join(', '),
  ]);
  return [
    table(['check', 'settings key', 'for a new account', 'credits per call (default price)', 'answers cached for (default)', 'fields it fills'], rows),
    '',
    `A call costs the sum of its enabled checks: ${Math.min(...prices)} to ${sum(prices)} credits with the default prices. Each deployment sets`,
    `its own prices and cache lifetimes (${checks.map((check) => code(check.price.variable)).join(', ')};`,
    `${checks.map((check) => code(check.cacheTtlSeconds.variable)).join(', ')}: the [configuration reference](${link('docs/operations.md', file)}#configuration-reference));`,
    '`cost_per_call` in `GET /api/v1/settings` is what a call costs there.',
  ].join('\n');
}

/** What `GET /api/v1/settings` answers a new account, and `PATCH` turning on every check that starts off. */
function settingsExample({ checks }: DocSources): string {
  // Every threshold with its default, as the answer has them: the README test parses this line as JSON.
  const thresholds = JSON.stringify(Object.fromEntries(RISK_THRESHOLDS.map((threshold) => [threshold.name, threshold.default])));
  const rest = `"daily_credit_limit":null,"low_balance_threshold":null,"webhook_url":null,"webhook_secret":"whsec_…","risk":{"thresholds":${thresholds},"destinations":{}},"check_options":${JSON.stringify(checkOptionsOf(checks, {}))}`;
  const answer = (on: (check: CheckDefinition) => boolean) =>
    `# {"checks":${JSON.stringify(Object.fromEntries(checks.map((check) => [check.name, on(check)])))},"cost_per_call":${sum(checks.filter(on).map((check) => check.price.default))},${rest}}`;
  const turnedOn = Object.fromEntries(checks.filter((check) => !check.defaultEnabled).map((check) => [check.name, true]));
  return [
    '```bash',
    'curl -s localhost:3000/api/v1/settings -H "Authorization: Bearer $API_KEY"',
    answer((check) => check.defaultEnabled),
    'curl -s -X PATCH localhost:3000/api/v1/settings -H "Authorization: Bearer $API_KEY" \\',
    `  -H 'Content-Type: application/json' -d '${JSON.stringify({ checks: turnedOn })}'`,
    answer(() => true),
    '```',
  ].join('\n');
}

function watchedFields({ checks }: DocSources): string {
  const registry = new CheckRegistry(checks.map((definition) => ({ definition })));
  const rows = registry.watchedFields().map((field) => [
    code(field),
    checks
      .filter((check) => check.watches.includes(field))
      .map((check) => check.title)
      .join(', '),
  ]);
  return table(['watched field', 'compared when one of these checks is on in both rounds'], rows);
}

function adaptersTable({ adapters }: DocSources, _arg: string | undefined, file: string): string {
  const rows = adapters.map((adapter) => {
    const { url, key, secret, tokenUrl } = adapter.settings as UpstreamAdapter['settings'];
    return [
      code(adapter.name),
      adapter.guide ? `${adapter.summary} ([its page](${link(adapter.guide, file)}))` : adapter.summary,
      adapter.checks.map(code).join(', '),
      url ? (url.default ? code(url.default) : 'required (no public default)') : 'not used',
      key ? `required: ${key}` : 'not used',
      secret ? `required: ${secret}` : 'not used',
      tokenUrl ? `required: ${tokenUrl}` : 'not used',
    ];
  });
  return table(['adapter (`<ID>_ADAPTER`, `PROVIDER`)', 'what it is', 'checks it answers', '`<ID>_URL` (default)', '`<ID>_KEY`', '`<ID>_SECRET`', '`<ID>_TOKEN_URL`'], rows);
}

function adapterSettings({ adapters }: DocSources, name: string | undefined): string {
  const adapter = adapters.find((known) => known.name === name);
  if (!adapter) throw new GeneratedRegionError(`the region "adapter" names an adapter of src/config/upstream-adapters.ts (${adapters.map((known) => known.name).join(', ')}), not "${name}"`);
  const prefix = providerEnvPrefix(adapter.name);
  const { url, key, secret, tokenUrl } = adapter.settings as UpstreamAdapter['settings'];
  const rows = [
    ...(url ? [['`<ID>_URL`', url.default ? `optional, default ${code(url.default)}` : 'required: the API root (no public default)']] : []),
    ...(key ? [['`<ID>_KEY`', `required: ${key}`]] : []),
    ...(secret ? [['`<ID>_SECRET`', `required: ${secret}`]] : []),
    ...(tokenUrl ? [['`<ID>_TOKEN_URL`', `required: ${tokenUrl}`]] : []),
  ];
  return [
    `Configure it with \`<ID>_ADAPTER=${adapter.name}\` for a provider id of \`LOOKUP_PROVIDERS\`, or with \`PROVIDER=${adapter.name}\``,
    `(one upstream, the id \`${adapter.name}\`: its variables start with \`${prefix}_\`). It answers ${adapter.checks.map(code).join(', ')}.`,
    rows.length === 0 ? 'It takes no other setting.' : 'Its settings:',
    ...(rows.length === 0 ? [] : ['', table(['variable', 'what it is'], rows)]),
  ].join('\n');
}

function environmentTables({ environment }: DocSources): string {
  return environment.map((part) => `### ${part.title}\n\n${variablesTable(part.variables)}`).join('\n\n');
}

function section({ environment }: DocSources, slug: string | undefined): ReferenceSection {
  const found = environment.find((part) => slugOf(part.title) === slug);
  if (!found) throw new GeneratedRegionError(`the region "env-section" names a section of src/config/environment.ts (${environment.map((part) => slugOf(part.title)).join(', ')}), not "${slug}"`);
  return found;
}

function variablesTable(variables: readonly ReferenceVariable[]): string {
  const defaultOf = (variable: ReferenceVariable) =>
    variable.deprecatedFor ? `as \`${variable.deprecatedFor}\`` : variable.default !== undefined ? code(variable.default) : `unset: ${variable.unset ?? 'nothing'}`;
  return table(
    ['variable', 'default', 'what it does'],
    variables.map((variable) => [code(variable.name), defaultOf(variable), variable.text]),
  );
}

// ---- .env.example

const ENV_EXAMPLE_WIDTH = 100;

/** .env.example: every variable of the schema by section, its description, then its default (or commented out when it has none). */
export function envExample({ environment }: DocSources): string {
  const out = [
    '# Phone Filter configuration. Every variable is optional; the values shown are the defaults, and',
    '# a variable commented out has none (its comment says what unset means). Copy to .env (read at',
    '# start-up; real environment variables win). Written by `npm run docs` from',
    "# src/config/environment.ts and the checks' definitions (src/checks/): edit those, not this file.",
    '# The reference: docs/operations.md.',
  ];
  for (const part of environment) {
    out.push('', `# ---- ${part.title}`);
    for (const variable of part.variables) {
      if (variable.deprecatedFor) continue;
      const unset = variable.default === undefined && variable.unset ? ` Unset: ${variable.unset}.` : '';
      out.push(...comment(`${variable.pattern ? `${variable.name}: ` : ''}${variable.text}${unset}`));
      if (variable.pattern) continue;
      out.push(variable.default !== undefined ? `${variable.name}=${variable.default}` : `# ${variable.name}=${variable.example ?? ''}`);
    }
  }
  return `${out.join('\n')}\n`;
}

/** Text as `# ` lines of at most ENV_EXAMPLE_WIDTH characters (a longer word stays whole). */
function comment(text: string): string[] {
  const lines: string[] = [];
  let line = '#';
  for (const word of text.split(/\s+/)) {
    if (line.length > 1 && line.length + 1 + word.length > ENV_EXAMPLE_WIDTH) {
      lines.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  lines.push(line);
  return lines;
}

// ---- Markdown helpers

function riskReasons(): string {
  return table(
    ['code', 'what it says'],
    Object.entries(REASON_CODES).map(([name, meaning]) => [code(name), meaning]),
  );
}

function riskThresholds(): string {
  return table(
    ['threshold', 'default', 'from', 'to', 'what it sets'],
    RISK_THRESHOLDS.map((threshold) => [code(threshold.name), String(threshold.default), String(threshold.min), String(threshold.max), threshold.description]),
  );
}

function riskDestinations(): string {
  return table(
    ['entry', 'risk', 'from'],
    DEFAULT_DESTINATION_ENTRIES.map((entry) => [code(entry.key), String(entry.risk), entry.source]),
  );
}

function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const row = (cells: readonly string[]) => `| ${cells.map((cell) => cell.replace(/\|/g, '\\|')).join(' | ')} |`;
  return [row(header), `|${header.map(() => '---').join('|')}|`, ...rows.map(row)].join('\n');
}

function code(text: string): string {
  return `\`${text}\``;
}

/** A link from the document `from` to the file `to`, both from the repository root. */
function link(to: string, from: string): string {
  return relative(dirname(from), to) || '.';
}

function slugOf(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}

/** Seconds as people say them: 0 → "not cached", 3600 → "1 h", 86400 → "24 h", 2592000 → "30 days". */
export function duration(seconds: number): string {
  if (seconds === 0) return 'not cached';
  if (seconds % 86_400 === 0 && seconds >= 2 * 86_400) return `${seconds / 86_400} days`;
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}
