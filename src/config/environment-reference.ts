import type { CheckDefinition } from '../checks/check-definition';
import { PRICED_CALLS } from '../checks/priced-calls';
import { EnvironmentVariables } from './environment';
import { PROVIDER_VARIABLES } from './lookup-providers';
import { documentedProperties } from './variable-doc';

/** One variable as the configuration reference and .env.example show it. */
export interface ReferenceVariable {
  /** Its name, or for a pattern the name with its placeholder (`<ID>_URL`). */
  readonly name: string;
  /** Its value when unset, as written in a .env file; undefined when it has none (`unset` says what that means). */
  readonly default?: string;
  readonly unset?: string;
  readonly text: string;
  readonly example?: string;
  /** The variable it is a former name of. */
  readonly deprecatedFor?: string;
  /** A name pattern (one variable per provider id), not a variable to set as written. */
  readonly pattern?: boolean;
}

export interface ReferenceSection {
  readonly title: string;
  readonly variables: readonly ReferenceVariable[];
}

/**
 * Every environment variable, by section, in the schema's order (environment.ts, each described by its
 * `@Doc`), with the variables of each registered check and of each provider id where the schema says.
 * What `npm run docs` writes the configuration reference and .env.example from.
 */
export function environmentReference(checks: readonly CheckDefinition[]): ReferenceSection[] {
  const defaults = new EnvironmentVariables() as unknown as Record<string, unknown>;
  const sections: Array<{ title: string; variables: ReferenceVariable[] }> = [];
  for (const property of documentedProperties(EnvironmentVariables)) {
    if (property.section !== undefined || sections.length === 0) sections.push({ title: property.section ?? '', variables: [] });
    const { variables } = sections[sections.length - 1];
    const value = defaults[property.name] ?? property.default;
    const { name, text, unset, example, deprecatedFor } = property;
    variables.push({ name, default: value === undefined ? undefined : String(value), unset, text, example, deprecatedFor });
    if (property.then === 'each check') {
      variables.push(...checks.flatMap(checkVariables));
      variables.push(...PRICED_CALLS.map((call) => ({ name: call.price.variable, default: String(call.price.default), text: `Credits per call of the ${call.title}${call.alsoCharged ? `, and ${call.alsoCharged}` : ''}.` })));
    }
    if (property.then === 'each provider') {
      variables.push(...PROVIDER_VARIABLES.map(({ suffix, unset: whenUnset, text: about }) => ({ name: `<ID>_${suffix}`, unset: whenUnset, text: about, pattern: true })));
    }
  }
  return sections;
}

/** A check's price and cache-lifetime variables, named with their defaults in its definition. */
function checkVariables(check: CheckDefinition): ReferenceVariable[] {
  return [
    { name: check.price.variable, default: String(check.price.default), text: `Credits per call of the ${check.title} check.` },
    { name: check.cacheTtlSeconds.variable, default: String(check.cacheTtlSeconds.default), text: `Seconds an answer of the ${check.title} check is cached (0: never).` },
  ];
}
