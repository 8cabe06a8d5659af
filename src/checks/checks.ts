/**
 * Which checks an account has on. The checks themselves are data (check-definition.ts), registered in
 * the CheckRegistry: the built-in ones (built-in-checks.ts) and any a module adds.
 */

/** Every registered check by name, on or off. */
export type EnabledChecks = Readonly<Record<string, boolean>>;

/** Credits per check, by name. */
export type CheckPrices = Readonly<Record<string, number>>;

export const NO_CHECK_ENABLED =
  'No check is enabled in your account settings, so there is nothing to look up. Enable at least one with PATCH /api/v1/settings.';

/** A call costs the sum of its enabled checks' prices. */
export function costPerCall(checks: EnabledChecks, prices: CheckPrices): number {
  return Object.keys(prices).reduce((sum, check) => sum + (checks[check] ? prices[check] : 0), 0);
}
