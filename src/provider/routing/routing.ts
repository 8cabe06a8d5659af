import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import type { RoutingRules } from '../../config/lookup-providers';

export type { RoutingRules };

/** No rules: every check of every number asks LOOKUP_PROVIDERS in its order (src/config/lookup-providers.ts: RoutingRules). */
export const NO_ROUTING: RoutingRules = { checks: {}, countries: {}, residency: {} };

/** The providers to ask for one check of one number, in order, before health is considered. */
export function routeFor(rules: RoutingRules, providers: readonly string[], check: string, e164: string): string[] {
  const usual = orderedBy(rules.checks[check] ?? [], providers);
  const first = longestMatch(rules.countries, e164);
  const ordered = first ? orderedBy(first, usual) : usual;
  const allowed = longestMatch(rules.residency, e164);
  return allowed ? ordered.filter((id) => allowed.includes(id)) : ordered;
}

/** `preferred` first (those known), then the rest of `all` in its order. */
function orderedBy(preferred: readonly string[], all: readonly string[]): string[] {
  const head = preferred.filter((id) => all.includes(id));
  return [...head, ...all.filter((id) => !head.includes(id))];
}

/**
 * The rule of a number: its region's (ISO 3166 code such as "CA", when the table has one: a calling code
 * such as +1 is shared by several countries), else its longest matching calling code's.
 */
function longestMatch(table: Record<string, string[]>, e164: string): string[] | undefined {
  const region = hasRegionKeys(table) ? parsePhoneNumberFromString(e164)?.country : undefined;
  if (region !== undefined && table[region] !== undefined) return table[region];
  const digits = e164.replace(/^\+/, '');
  const code = Object.keys(table)
    .filter((prefix) => digits.startsWith(prefix))
    .sort((a, b) => b.length - a.length)[0];
  return code === undefined ? undefined : table[code];
}

function hasRegionKeys(table: Record<string, string[]>): boolean {
  return Object.keys(table).some((key) => /^[A-Z]{2}$/.test(key));
}
