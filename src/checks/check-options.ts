import type { CheckDefinition, CheckOptions, CheckOptionValues } from './check-definition';

/**
 * Per-account options of checks (`check_options` of the settings): what an account stored, as
 * `{ <check>: { <option>: value } }`, only the values it set. The defaults and bounds are the check's
 * definition's (CheckDefinition.options); nothing else names an option.
 */
export type StoredCheckOptions = Readonly<Record<string, Readonly<Record<string, number>>>>;

/** A change: any options of any checks; null goes back to the default. */
export type CheckOptionsChange = Readonly<Record<string, Readonly<Record<string, number | null>>>>;

/** A check's option values: each one the account stored within its bounds, else its default. */
export function optionValuesOf(check: CheckDefinition, stored: StoredCheckOptions | undefined): CheckOptionValues {
  const own = stored?.[check.name] ?? {};
  return Object.fromEntries(
    (check.options ?? []).map((option) => {
      const value = own[option.name];
      const valid = typeof value === 'number' && Number.isSafeInteger(value) && value >= option.min && value <= option.max;
      return [option.name, valid ? value : option.default];
    }),
  );
}

/** The option values of every check that declares options (registered order). */
export function checkOptionsOf(checks: readonly CheckDefinition[], stored: StoredCheckOptions | undefined): CheckOptions {
  return Object.fromEntries(checks.filter((check) => (check.options ?? []).length > 0).map((check) => [check.name, optionValuesOf(check, stored)]));
}

/**
 * What is wrong with a change of check options, one sentence per problem naming the option
 * (`check_options.<check>.<option> must be an integer from 1 to 2400, …`); none when it is valid.
 */
export function checkOptionsChangeProblems(checks: readonly CheckDefinition[], change: unknown): string[] {
  if (change === null || typeof change !== 'object' || Array.isArray(change)) return ['check_options must be an object of checks, each an object of options'];
  return Object.entries(change).flatMap(([name, options]) => {
    const check = checks.find((known) => known.name === name);
    const declared = check?.options ?? [];
    if (!check) return [`unknown field "check_options.${name}": not a check`];
    if (declared.length === 0) return [`check_options.${name}: the check ${name} has no options`];
    if (options === null || typeof options !== 'object' || Array.isArray(options)) return [`check_options.${name} must be an object of options (${declared.map((option) => option.name).join(', ')})`];
    return Object.entries(options as Record<string, unknown>).flatMap(([optionName, value]) => {
      const option = declared.find((known) => known.name === optionName);
      const where = `check_options.${name}.${optionName}`;
      if (!option) return [`unknown field "${where}" (options of ${name}: ${declared.map((known) => known.name).join(', ')})`];
      if (value === null) return [];
      if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < option.min || value > option.max) {
        return [`${where} must be an integer from ${option.min} to ${option.max}, or null for the default (${option.default})`];
      }
      return [];
    });
  });
}

/** The same option values (a cached answer serves only a lookup asked with its options). */
export function sameOptionValues(a: CheckOptionValues | undefined, b: CheckOptionValues | undefined): boolean {
  const left = a ?? {};
  const right = b ?? {};
  const keys = new Set([...Object.keys(left), ...Object.keys(right)]);
  return [...keys].every((key) => left[key] === right[key]);
}

/** `window_hours=168`: option values in a stable order, for a flight's key and logs (never a number). */
export function optionValuesKey(values: CheckOptionValues | undefined): string {
  return Object.keys(values ?? {})
    .sort()
    .map((key) => `${key}=${values![key]}`)
    .join(',');
}
