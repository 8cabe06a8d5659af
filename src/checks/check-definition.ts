import type { ShownField } from './phone-answer';

/**
 * What a check is: one definition, data only. Everything else (settings, prices, the cache, /filter's
 * six fields, bulk results and CSV, watchlist comparisons, Swagger) reads it from the CheckRegistry.
 */

/** A value an answer field holds (JSON scalars: it is cached and stored as JSON). */
export type FieldValue = string | number | boolean | null;

/** A number set per deployment: the environment variable it is read from, and its default. */
export interface ConfiguredNumber {
  variable: string;
  default: number;
}

/**
 * A per-account option of a check, declared by its definition: settings hold each account's value
 * (`check_options`, validated against this), lookups pass the values to the adapter, and an answer is
 * reused from the cache only for the same values. Whole numbers for now.
 */
export interface CheckOptionDefinition {
  /** The settings key under the check's name: lower_snake_case. */
  readonly name: string;
  /** For people (Swagger, docs): what it changes in the answer. */
  readonly description: string;
  readonly min: number;
  readonly max: number;
  readonly default: number;
}

/** One check's options, each resolved to a value (the account's, else the default). */
export type CheckOptionValues = Readonly<Record<string, number>>;

/** The option values of every check that declares options, by check name. */
export type CheckOptions = Readonly<Record<string, CheckOptionValues>>;

export interface CheckDefinition {
  /** The settings key, the cache key's part, the metrics label: lower_snake_case. */
  readonly name: string;
  /** For people (Swagger, docs): "Network Connection Status". */
  readonly title: string;
  /** On for a new account. A check added later starts off for existing accounts. */
  readonly defaultEnabled: boolean;
  /** Credits per call when the check is on. */
  readonly price: ConfiguredNumber;
  /** How long an answer of this check is cached; 0: never. */
  readonly cacheTtlSeconds: ConfiguredNumber;
  /** Every field of its answer record (CheckAnswer.fields), as adapters produce them. */
  readonly fields: readonly string[];
  /**
   * The /filter fields it fills, each from one of its fields. A field that several enabled checks fill
   * takes the first known value, in registration order; a check that is off leaves its fields neutral.
   */
  readonly shows: Partial<Record<ShownField, string>>;
  /** Its fields that bulk results, bulk CSV and watchlist answers carry besides /filter's six (never /filter). */
  readonly reports: readonly string[];
  /** Result fields a watchlist compares between rounds when this check produced them in both. */
  readonly watches: readonly string[];
  /**
   * Its columns in the CSV of a bulk job that has it on (result fields), after phone, reference and the
   * answer's six fields, which every job's CSV has (csv-layout.ts); a column already there is not repeated.
   */
  readonly csvColumns: readonly string[];
  /** Its per-account options (none: the check has no option). */
  readonly options?: readonly CheckOptionDefinition[];
}

/**
 * Everything one check produced for one number: a full record (status reasons, network codes where the
 * upstream gives them), which provider answered and when. /filter shows a projection of it.
 */
export interface CheckAnswer {
  readonly check: string;
  readonly fields: Readonly<Record<string, FieldValue>>;
  /** The adapter that answered: 'sandbox', 'hlr-lookups', ... */
  readonly provider: string;
  /** When the provider answered (ISO 8601); a cached answer keeps its original time. */
  readonly observedAt: string;
}

/** Answers one check for one number (with the check's option values, when it declares options): what a provider adapter does for the checks it offers. */
export interface CheckAdapter {
  answer(check: string, e164: string, lane?: string, options?: CheckOptionValues): Promise<CheckAnswer>;
}

/** A check to register, with the adapter that answers it when the configured provider does not. */
export interface CheckRegistration {
  definition: CheckDefinition;
  adapter?: CheckAdapter;
}
