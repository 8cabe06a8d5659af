import { isSupportedCountry } from 'libphonenumber-js/max';
import { UPSTREAM_ADAPTERS, type UpstreamAdapter, type UpstreamAdapterName } from './upstream-adapters';

/**
 * Where each check of a number may go, and in which order (LOOKUP_ROUTING, docs/operations.md):
 * - `countries`: per country (ISO 3166 code, e.g. "CA") or country calling code (the E.164 digits it
 *   starts with, e.g. "1", "44"), the providers to ask first (the others follow in their usual order);
 * - `checks`: per check, the usual order (default: LOOKUP_PROVIDERS' order);
 * - `residency`: per country or calling code, the only providers a number of it may be sent to (a
 *   data-residency allow-list); a number with none allowed is not sent anywhere.
 * For `countries` and `residency`, the number's country wins, then the longest matching calling code.
 */
export interface RoutingRules {
  checks: Partial<Record<string, string[]>>;
  countries: Record<string, string[]>;
  residency: Record<string, string[]>;
}

/**
 * One upstream of LOOKUP_PROVIDERS (or the one of PROVIDER): its id, adapter, address and credentials
 * (empty where its adapter reads none: src/config/upstream-adapters.ts).
 */
export interface ProviderEntry {
  id: string;
  adapter: UpstreamAdapterName;
  baseUrl: string;
  key: string;
  secret: string;
  /** The OAuth2 token endpoint, for an adapter that reads one (`<ID>_TOKEN_URL`); '' otherwise. */
  tokenUrl: string;
  /** What one check costs at this provider (`<ID>_PRICE`), for the order between equals; 0 when not given. */
  price: number;
}

/**
 * The variables of each provider id of LOOKUP_PROVIDERS (`<ID>_…`, read by parseLookupProviders below),
 * as the configuration reference and .env.example describe them (npm run docs).
 */
export const PROVIDER_VARIABLES: ReadonlyArray<{ suffix: string; unset: string; text: string }> = [
  { suffix: 'ADAPTER', unset: 'the id itself', text: 'The adapter the id runs on (the adapters and the settings each needs are listed with `LOOKUP_PROVIDERS`).' },
  { suffix: 'URL', unset: "the adapter's public API", text: 'Base URL of the upstream, for an adapter that takes one (required for one without a public API: camara-sim-swap).' },
  { suffix: 'KEY', unset: 'none', text: "The upstream credential's key or account id, required where the adapter's protocol needs it." },
  { suffix: 'SECRET', unset: 'none', text: "The upstream credential's secret, required where the adapter's protocol needs it." },
  { suffix: 'TOKEN_URL', unset: 'none', text: 'The OAuth2 token endpoint (client credentials: `<ID>_KEY` and `<ID>_SECRET`), required where the adapter needs one.' },
  { suffix: 'PRICE', unset: '0', text: 'What one check costs at this provider, in any unit shared by all: decides the order among equals (ids joined by `|`).' },
];

/** `hlr-lookups` → `HLR_LOOKUPS`: the prefix of an id's variables. */
export function providerEnvPrefix(id: string): string {
  return id.toUpperCase().replace(/-/g, '_');
}

/**
 * The upstreams named by LOOKUP_PROVIDERS (ids in priority order, e.g. `hlr-lookups,backup`; ids joined
 * by `|` are equals, asked cheapest first by `<ID>_PRICE`, e.g. `a|b,c`), each read from `<ID>_ADAPTER`
 * (default: the id itself), the settings its adapter's protocol reads (src/config/upstream-adapters.ts:
 * `<ID>_URL`, default the adapter's public API; `<ID>_KEY`, `<ID>_SECRET`, required when it reads them)
 * and `<ID>_PRICE` (optional). Returns the entries in the order to ask them, and the problems, one line
 * each, so that start-up names every mistake at once.
 */
export function parseLookupProviders(
  list: string,
  raw: Record<string, unknown>,
  adapters: ReadonlyArray<UpstreamAdapter & { readonly name: UpstreamAdapterName }> = UPSTREAM_ADAPTERS,
): { entries: ProviderEntry[]; problems: string[] } {
  const entries: Array<ProviderEntry & { tier: number }> = [];
  const problems: string[] = [];
  const ids = list.split(',').flatMap((group, tier) => group.split('|').map((id) => ({ id: id.trim(), tier })));
  const seen = new Set<string>();
  for (const { id, tier } of ids) {
    if (!/^[a-z][a-z0-9-]{0,30}$/.test(id)) {
      problems.push(`  - LOOKUP_PROVIDERS=${JSON.stringify(list)}: ${JSON.stringify(id)} is not a provider id (lower-case letters, digits and dashes)`);
      continue;
    }
    if (seen.has(id)) {
      problems.push(`  - LOOKUP_PROVIDERS=${JSON.stringify(list)}: ${id} is listed twice`);
      continue;
    }
    seen.add(id);
    const prefix = providerEnvPrefix(id);
    const read = (name: string) => {
      const value = raw[`${prefix}_${name}`];
      return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
    };
    const adapterName = read('ADAPTER') ?? id;
    const adapter = adapters.find(({ name }) => name === adapterName);
    if (!adapter) {
      problems.push(`  - ${prefix}_ADAPTER=${JSON.stringify(adapterName)}: must be one of ${adapters.map(({ name }) => name).join(', ')} (provider ${id})`);
      continue;
    }
    const { url, key: needsKey, secret: needsSecret, tokenUrl: needsTokenUrl } = adapter.settings as UpstreamAdapter['settings'];
    const baseUrl = url ? (read('URL') ?? url.default ?? '').replace(/\/+$/, '') : '';
    if (url && baseUrl === '') problems.push(`  - ${prefix}_URL: required for provider ${id} (adapter ${adapter.name} has no public default)`);
    else if (url && !isHttpUrl(baseUrl)) problems.push(`  - ${prefix}_URL=${JSON.stringify(baseUrl)}: must be an http(s) URL (provider ${id})`);
    const tokenUrl = needsTokenUrl ? (read('TOKEN_URL') ?? '') : '';
    if (needsTokenUrl && tokenUrl !== '' && !isHttpUrl(tokenUrl)) problems.push(`  - ${prefix}_TOKEN_URL=${JSON.stringify(tokenUrl)}: must be an http(s) URL (provider ${id})`);
    const key = needsKey ? (read('KEY') ?? '') : '';
    const secret = needsSecret ? (read('SECRET') ?? '') : '';
    const missing = [
      needsKey && !key ? `${prefix}_KEY` : undefined,
      needsSecret && !secret ? `${prefix}_SECRET` : undefined,
      needsTokenUrl && !tokenUrl ? `${prefix}_TOKEN_URL` : undefined,
    ].filter((name) => name !== undefined);
    if (missing.length > 0) problems.push(`  - ${missing.join(' and ')}: required for provider ${id} (adapter ${adapter.name})`);
    const priceText = read('PRICE');
    const price = priceText === undefined ? 0 : Number(priceText);
    if (!Number.isFinite(price) || price < 0) problems.push(`  - ${prefix}_PRICE=${JSON.stringify(priceText)}: must be a number, 0 or more (provider ${id})`);
    entries.push({ id, adapter: adapter.name, baseUrl, key, secret, tokenUrl, price: Number.isFinite(price) ? price : 0, tier });
  }
  // Cost-aware between equals: within a group the cheapest first (a stable sort keeps the listed order on ties).
  const ordered = [...entries].sort((a, b) => a.tier - b.tier || a.price - b.price);
  return { entries: ordered.map(({ tier: _tier, ...entry }) => entry), problems };
}

function isHttpUrl(text: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

/**
 * LOOKUP_ROUTING: JSON `{ "checks": { "<check>": [ids] }, "countries": { "<calling code or country>": [ids] },
 * "residency": { "<calling code or country>": [ids] } }`, every part optional (src/provider/routing/routing.ts says what
 * each does). Every id must be one of LOOKUP_PROVIDERS; problems one line each.
 */
export function parseLookupRouting(text: string, ids: readonly string[], checks: readonly string[]): { rules: RoutingRules; problems: string[] } {
  const problems: string[] = [];
  const rules: RoutingRules = { checks: {}, countries: {}, residency: {} };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { rules, problems: ['  - LOOKUP_ROUTING: not JSON'] };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { rules, problems: ['  - LOOKUP_ROUTING: must be a JSON object'] };
  for (const [part, value] of Object.entries(parsed)) {
    if (part !== 'checks' && part !== 'countries' && part !== 'residency') {
      problems.push(`  - LOOKUP_ROUTING.${part}: unknown (checks, countries, residency)`);
      continue;
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`  - LOOKUP_ROUTING.${part}: must be an object`);
      continue;
    }
    for (const [key, list] of Object.entries(value as Record<string, unknown>)) {
      const where = `LOOKUP_ROUTING.${part}.${key}`;
      if (part === 'checks' ? !checks.includes(key) : !/^\d{1,3}$/.test(key) && !isSupportedCountry(key)) {
        problems.push(`  - ${where}: ${part === 'checks' ? `not a check (${checks.join(', ')})` : 'not a country calling code (1 to 3 digits) or country code (ISO 3166, e.g. CA)'}`);
        continue;
      }
      if (!Array.isArray(list) || list.some((id) => typeof id !== 'string')) {
        problems.push(`  - ${where}: must be a list of provider ids`);
        continue;
      }
      const unknown = (list as string[]).filter((id) => !ids.includes(id));
      if (unknown.length > 0) {
        problems.push(`  - ${where}: ${unknown.join(', ')} not in LOOKUP_PROVIDERS`);
        continue;
      }
      (rules[part] as Record<string, string[]>)[key] = list as string[];
    }
  }
  return { rules, problems };
}
