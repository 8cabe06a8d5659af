/**
 * An account's tuning of the risk verdict (POST /api/v1/risk, docs/sms-pumping.md): its thresholds and
 * its adjustments of the destination risk table. Defined here, in settings/ (a leaf), because settings
 * stores and validates them; the risk module reads them and owns what they mean.
 */

export interface RiskThresholdDefinition {
  readonly name: string;
  readonly default: number;
  readonly min: number;
  readonly max: number;
  /** For people (docs, Swagger). */
  readonly description: string;
}

/** Every threshold, with its default: one definition each (docs/sms-pumping.md "Tuning" lists them from here). */
export const RISK_THRESHOLDS = [
  { name: 'flag_score', default: 30, min: 1, max: 100, description: 'Score from which the recommendation is `flag` (level medium).' },
  { name: 'block_score', default: 70, min: 1, max: 100, description: 'Score from which the recommendation is `block` (level high). Above flag_score.' },
  {
    name: 'range_velocity_hour',
    default: 4,
    min: 2,
    max: 100_000,
    description: 'RANGE_VELOCITY: distinct numbers of one 10,000-number range (the number without its last four digits) asked by the account from one source within an hour.',
  },
  {
    name: 'range_velocity_day',
    default: 10,
    min: 2,
    max: 1_000_000,
    description: 'RANGE_VELOCITY: the same within 24 hours (a slow attack).',
  },
  {
    name: 'block_velocity_hour',
    default: 3,
    min: 2,
    max: 10_000,
    description: 'RANGE_VELOCITY: distinct numbers of one 100-number range (the number without its last two digits), account and source, within an hour.',
  },
  {
    name: 'deployment_range_velocity_hour',
    default: 12,
    min: 2,
    max: 1_000_000,
    description: "RANGE_VELOCITY: distinct numbers of one 10,000-number range asked by all of this deployment's accounts together within an hour.",
  },
  {
    name: 'sequential_numbers',
    default: 3,
    min: 2,
    max: 30,
    description: 'SEQUENTIAL_NUMBERS: distinct numbers within 30 consecutive numbers (the block of ten the number is in and the two beside it), account and source, within an hour.',
  },
  { name: 'ip_numbers_hour', default: 10, min: 2, max: 100_000, description: 'IP_VELOCITY: distinct numbers asked with one `ip` within an hour.' },
  { name: 'ip_countries_hour', default: 3, min: 2, max: 250, description: 'MANY_COUNTRIES: distinct countries of the numbers asked with one `ip` within an hour.' },
  {
    name: 'source_countries_hour',
    default: 8,
    min: 2,
    max: 250,
    description: 'MANY_COUNTRIES: distinct countries of one `source` within an hour, when they are at least half of its distinct numbers (one number a country).',
  },
  {
    name: 'verification_rate',
    default: 25,
    min: 0,
    max: 100,
    description: 'LOW_VERIFICATION_RATE: a verification rate (percent) below this, over at least verification_min_outcomes known outcomes in 24 hours.',
  },
  { name: 'verification_min_outcomes', default: 5, min: 1, max: 10_000, description: 'Known outcomes (feedback, or no feedback past the grace) needed before a rate counts.' },
  {
    name: 'verification_grace_seconds',
    default: 600,
    min: 30,
    max: 86_400,
    description:
      "A verdict without feedback counts as not verified once this has passed; shorter when the account's own feedback arrives sooner (three times the time 95% of its verified sign-ups took, at least 60 s).",
  },
  { name: 'swap_window_hours', default: 168, min: 1, max: 8760, description: 'RECENT_SIM_SWAP: a known SIM change within this many hours.' },
] as const satisfies readonly RiskThresholdDefinition[];

export type RiskThresholdName = (typeof RISK_THRESHOLDS)[number]['name'];
export type RiskThresholds = Readonly<Record<RiskThresholdName, number>>;

export const DEFAULT_RISK_THRESHOLDS: RiskThresholds = Object.fromEntries(RISK_THRESHOLDS.map((t) => [t.name, t.default])) as RiskThresholds;

/**
 * A destination key: an ISO 3166-1 alpha-2 country (`CU`) or an E.164 prefix (`+88213`). The risk of a
 * number is the entry of its longest matching prefix, else of its country.
 */
export const DESTINATION_KEY = /^(?:[A-Z]{2}|\+[1-9]\d{0,14})$/;
/** Entries an account may set (the deployment's table itself is not bounded here). */
export const MAX_DESTINATION_OVERRIDES = 500;

/** What an account stored: the thresholds it set and its destination adjustments (risk 0-100 each). */
export interface StoredRiskSettings {
  thresholds?: Partial<Record<RiskThresholdName, number>>;
  destinations?: Record<string, number>;
}

/** The account's tuning as the verdict uses it: every threshold (set or default) and its destination adjustments. */
export interface AccountRiskSettings {
  thresholds: RiskThresholds;
  destinations: Readonly<Record<string, number>>;
}

/** A change: a value sets, null goes back to the default (thresholds) or the deployment's table (destinations). */
export interface RiskSettingsChange {
  thresholds?: Record<string, number | null>;
  destinations?: Record<string, number | null>;
}

export function effectiveRiskSettings(stored: StoredRiskSettings | null | undefined): AccountRiskSettings {
  return {
    thresholds: { ...DEFAULT_RISK_THRESHOLDS, ...(stored?.thresholds ?? {}) },
    destinations: { ...(stored?.destinations ?? {}) },
  };
}

const THRESHOLD_BY_NAME = new Map<string, RiskThresholdDefinition>(RISK_THRESHOLDS.map((t) => [t.name, t]));

/** What is wrong with a change of the risk settings, one sentence each (none: valid). */
export function riskChangeProblems(change: unknown): string[] {
  if (change === null || typeof change !== 'object' || Array.isArray(change)) return ['risk must be an object with thresholds and/or destinations'];
  const problems: string[] = [];
  for (const key of Object.keys(change)) if (key !== 'thresholds' && key !== 'destinations') problems.push(`unknown field "risk.${key}"`);
  const { thresholds, destinations } = change as Record<string, unknown>;
  if (thresholds !== undefined) problems.push(...thresholdProblems(thresholds));
  if (destinations !== undefined) problems.push(...destinationProblems(destinations));
  return problems;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function thresholdProblems(thresholds: unknown): string[] {
  if (!isPlainObject(thresholds)) return ['risk.thresholds must be an object'];
  return Object.entries(thresholds).flatMap(([name, value]) => {
    const definition = THRESHOLD_BY_NAME.get(name);
    if (!definition) return [`unknown field "risk.thresholds.${name}" (known: ${[...THRESHOLD_BY_NAME.keys()].join(', ')})`];
    if (value === null) return [];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < definition.min || value > definition.max) {
      return [`risk.thresholds.${name} must be null or an integer from ${definition.min} to ${definition.max}`];
    }
    return [];
  });
}

function destinationProblems(destinations: unknown): string[] {
  if (!isPlainObject(destinations)) return ['risk.destinations must be an object'];
  const entries = Object.entries(destinations);
  if (entries.length > MAX_DESTINATION_OVERRIDES) return [`risk.destinations may hold at most ${MAX_DESTINATION_OVERRIDES} entries`];
  return entries.flatMap(([key, value]) => {
    if (!DESTINATION_KEY.test(key)) return [`risk.destinations key "${key.slice(0, 20)}" must be a country (ISO 3166-1 alpha-2, e.g. "CU") or an E.164 prefix (e.g. "+88213")`];
    if (value === null) return [];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 100) return [`risk.destinations.${key} must be null or an integer from 0 to 100`];
    return [];
  });
}

/** The thresholds once a change is applied to what is stored: flag_score must stay below block_score. */
export function thresholdOrderProblem(stored: StoredRiskSettings | null | undefined, change: RiskSettingsChange): string | undefined {
  const merged: Record<string, number> = { ...DEFAULT_RISK_THRESHOLDS, ...(stored?.thresholds ?? {}) };
  for (const [name, value] of Object.entries(change.thresholds ?? {})) {
    merged[name] = value ?? THRESHOLD_BY_NAME.get(name)!.default;
  }
  if (merged.flag_score >= merged.block_score) {
    return `risk.thresholds.flag_score (${merged.flag_score}) must be below block_score (${merged.block_score})`;
  }
  return undefined;
}
