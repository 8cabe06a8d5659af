import { BUILT_IN_CHECKS } from '../checks/built-in-checks';
import type { CheckDefinition } from '../checks/check-definition';

// What the request DTOs (dto/settings.dto.ts) validate against, apart from them so that SettingsService,
// which fills it, loads no Swagger (the admin CLI loads the service).

/** Largest credit amount a cap or threshold may name (the admin API's credit limit). */
export const MAX_CREDIT_SETTING = 1_000_000_000_000;

/** The checks (and the options each declares) the request layer knows: the built-in ones, and those registered at start-up (SettingsService adds them). */
const optionChecks: CheckDefinition[] = [...BUILT_IN_CHECKS];
export const knownOptionChecks: readonly CheckDefinition[] = optionChecks;

export function knowCheckOptions(checks: Iterable<CheckDefinition>): void {
  for (const check of checks) {
    if (!knownOptionChecks.some((known) => known.name === check.name)) optionChecks.push(check);
  }
}

/**
 * The check names the request layer knows: the built-in ones, and those a CheckRegistry registers at
 * start-up (SettingsService adds them). SettingsService checks a change again against its own registry.
 */
const checkNames = new Set(BUILT_IN_CHECKS.map((check) => check.name));
export const knownCheckNames: ReadonlySet<string> = checkNames;

export function knowCheckNames(names: Iterable<string>): void {
  for (const name of names) checkNames.add(name);
}
