/**
 * The checks a call can run: their names, which of them an account has on, what they cost, and how
 * the settings row stores them. The one home of the concept: a new check starts here.
 */
export type CheckName = 'network_status' | 'line_type' | 'portability';
export const CHECK_NAMES: readonly CheckName[] = ['network_status', 'line_type', 'portability'];

/** Which checks run on a call: every check is named, on or off. */
export type EnabledChecks = Record<CheckName, boolean>;

/** Credits per check, set per deployment (PRICE_* variables). */
export type CheckPrices = Record<CheckName, number>;

export const NO_CHECK_ENABLED =
  'No check is enabled in your account settings, so there is nothing to look up. Enable at least one with PATCH /api/v1/settings.';

/** A call costs the sum of its enabled checks' prices. */
export function costPerCall(checks: EnabledChecks, prices: CheckPrices): number {
  return CHECK_NAMES.reduce((sum, check) => sum + (checks[check] ? prices[check] : 0), 0);
}

export function anyCheckEnabled(checks: EnabledChecks): boolean {
  return CHECK_NAMES.some((check) => checks[check]);
}

/** The check switches as the account_settings row (entity) holds them. */
export interface ChecksColumns {
  networkStatus: boolean;
  lineType: boolean;
  portability: boolean;
}

const COLUMN_OF = { network_status: 'networkStatus', line_type: 'lineType', portability: 'portability' } as const satisfies Record<
  CheckName,
  keyof ChecksColumns
>;

/** The row's columns → the checks, in the contract's names. */
export function checksFromColumns(row: ChecksColumns): EnabledChecks {
  return Object.fromEntries(CHECK_NAMES.map((check) => [check, row[COLUMN_OF[check]]])) as EnabledChecks;
}

/** Some checks in the contract's names → the columns to change (only those given). */
export function columnsFromChecks(checks: Partial<EnabledChecks>): Partial<ChecksColumns> {
  const columns: Partial<ChecksColumns> = {};
  for (const check of CHECK_NAMES) if (checks[check] !== undefined) columns[COLUMN_OF[check]] = checks[check];
  return columns;
}
