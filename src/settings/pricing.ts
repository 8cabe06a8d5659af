import { CHECK_NAMES, CheckName } from '../config/app-config';
import type { EnabledChecks } from '../provider/lookup.types';

/** A call costs the sum of its enabled checks' prices (API.md section 4). */
export function costPerCall(checks: EnabledChecks, prices: Record<CheckName, number>): number {
  return CHECK_NAMES.reduce((sum, check) => sum + (checks[check] ? prices[check] : 0), 0);
}

export function anyCheckEnabled(checks: EnabledChecks): boolean {
  return CHECK_NAMES.some((check) => checks[check]);
}
