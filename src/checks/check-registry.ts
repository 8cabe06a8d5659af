import type { CheckAdapter, CheckAnswer, CheckDefinition, CheckRegistration, FieldValue } from './check-definition';
import { costPerCall, EnabledChecks } from './checks';
import type { CsvLayout } from './csv-layout';
import { PRICED_CALLS, type PricedCall } from './priced-calls';
import { phoneAnswerOf, type PhoneAnswer, type ReportedAnswer, SHOWN_FIELDS, type ShownField } from './phone-answer';

/** What the checks that ran said about one number, with the numbering plan's facts (free). */
export interface NumberReport {
  region: string | null;
  validForPlan: boolean;
  /** The account's checks when it was asked (the enabled ones ran). */
  checks: EnabledChecks;
  /** Each enabled check's full record; none for a number not valid for its plan (nothing was asked). */
  answers: Readonly<Record<string, CheckAnswer>>;
}

/** Values of the price and cache-lifetime variables that are set (validated integers), by variable name. */
export type CheckTuning = Readonly<Record<string, number>>;

const NAME = /^[a-z][a-z0-9_]{0,47}$/;

/**
 * Every check the service runs, in registration order: the built-in ones, then any a module registers
 * (ChecksModule.forRoot). The rest of the code iterates it instead of naming checks.
 */
export class CheckRegistry {
  private readonly definitions: CheckDefinition[] = [];
  private readonly adapters = new Map<string, CheckAdapter>();

  constructor(
    registrations: readonly CheckRegistration[],
    private readonly tuning: CheckTuning = {},
  ) {
    for (const registration of registrations) this.register(registration);
  }

  register({ definition, adapter }: CheckRegistration): void {
    if (!NAME.test(definition.name)) throw new Error(`A check's name is lower_snake_case: "${definition.name}"`);
    if (this.definitions.some((known) => known.name === definition.name)) throw new Error(`The check "${definition.name}" is registered twice`);
    this.definitions.push(definition);
    if (adapter) this.adapters.set(definition.name, adapter);
  }

  all(): readonly CheckDefinition[] {
    return this.definitions;
  }

  names(): string[] {
    return this.definitions.map((check) => check.name);
  }

  has(name: string): boolean {
    return this.definitions.some((check) => check.name === name);
  }

  get(name: string): CheckDefinition {
    const check = this.definitions.find((known) => known.name === name);
    if (!check) throw new Error(`No check named "${name}"`);
    return check;
  }

  /** The adapter registered with a check, if any (otherwise the configured provider answers it). */
  adapterOf(name: string): CheckAdapter | undefined {
    return this.adapters.get(name);
  }

  /** This deployment's price of a check, in credits. */
  price(name: string): number {
    const { price } = this.get(name);
    return this.tuning[price.variable] ?? price.default;
  }

  /** This deployment's price of a paid call that is not a check (the risk verdict), in credits. */
  callPrice(call: PricedCall): number {
    return this.tuning[call.price.variable] ?? call.price.default;
  }

  cacheTtlSeconds(name: string): number {
    const { cacheTtlSeconds } = this.get(name);
    return this.tuning[cacheTtlSeconds.variable] ?? cacheTtlSeconds.default;
  }

  /** Price and cache variables that are set but that no registered check reads (a typo, or a check removed). */
  unusedVariables(): string[] {
    const read = new Set([
      ...this.definitions.flatMap((check) => [check.price.variable, check.cacheTtlSeconds.variable]),
      ...PRICED_CALLS.map((call) => call.price.variable),
    ]);
    return Object.keys(this.tuning).filter((variable) => !read.has(variable));
  }

  /** Every check on or off, from the names stored as enabled (names of checks not registered are ignored). */
  fromEnabledNames(names: readonly string[]): EnabledChecks {
    return Object.fromEntries(this.definitions.map((check) => [check.name, names.includes(check.name)]));
  }

  defaultNames(): string[] {
    return this.definitions.filter((check) => check.defaultEnabled).map((check) => check.name);
  }

  /** The enabled checks, in registration order; a name missing from `checks` (stored before it existed) is off. */
  enabled(checks: EnabledChecks): readonly CheckDefinition[] {
    // A call asks this several times of the same settings object (the settings cache hands out one per
    // account for a second): the filtered list is kept with that object, not built again each time.
    let found = this.enabledOf.get(checks);
    if (found === undefined) {
      found = this.definitions.filter((check) => checks[check.name] === true);
      this.enabledOf.set(checks, found);
    }
    return found;
  }

  private readonly enabledOf = new WeakMap<EnabledChecks, readonly CheckDefinition[]>();

  /** A call costs the sum of its enabled checks' prices. */
  costOf(checks: EnabledChecks): number {
    return costPerCall(checks, Object.fromEntries(this.names().map((name) => [name, this.price(name)])));
  }

  /**
   * /filter's six fields from the full records. The shape never depends on the settings: a disabled
   * check leaves its fields neutral. A number not valid for its plan is ABSENT, not looked up; `valid`
   * is false also when the network says ABSENT.
   */
  toPhoneAnswer(report: NumberReport): PhoneAnswer {
    const enabled = report.validForPlan ? this.enabled(report.checks) : [];
    const filled: Partial<Record<ShownField, FieldValue>> = {};
    for (const field of SHOWN_FIELDS) {
      const value = firstKnown(enabled, report.answers, field);
      if (value !== undefined) filled[field] = value;
    }
    return phoneAnswerOf(report.region, report.validForPlan, filled);
  }

  /** The six fields, then what the enabled checks report beyond them (null when not known). */
  toReportedAnswer(report: NumberReport): ReportedAnswer {
    const answer: Record<string, FieldValue> = { ...this.toPhoneAnswer(report) };
    for (const check of this.enabled(report.checks)) {
      for (const field of check.reports) if (!(field in answer)) answer[field] = report.answers[check.name]?.fields[field] ?? null;
    }
    return answer as ReportedAnswer;
  }

  /**
   * The CSV columns of a bulk job of these checks, fixed at its submission: the answer's six fields
   * (country and valid free, then /filter's shown fields), the columns its enabled checks add beyond
   * them, each once; provenance for its enabled checks. A check registered later, or one the account
   * leaves off, adds nothing.
   */
  csvLayout(checks: EnabledChecks): CsvLayout {
    const enabled = this.enabled(checks);
    return {
      answer: [...new Set(['country', 'valid', ...SHOWN_FIELDS, ...enabled.flatMap((check) => check.csvColumns)])],
      answeredBy: enabled.map((check) => check.name),
    };
  }

  /** Every result field a watchlist may compare, each once: /filter's shown fields in their order, then the others in registration order. */
  watchedFields(): string[] {
    const all = new Set(this.definitions.flatMap((check) => check.watches));
    const shown: readonly string[] = SHOWN_FIELDS;
    return [...shown.filter((field) => all.has(field)), ...[...all].filter((field) => !shown.includes(field))];
  }

  /**
   * The check whose answer supplied `field` in this report, as toPhoneAnswer fills it: for a field
   * several checks fill (carrier), the first enabled check that knew it; otherwise the enabled check
   * that watches it. Where a change's value came from (its provider and time).
   */
  suppliedBy(field: string, report: NumberReport): string | undefined {
    const enabled = this.enabled(report.checks);
    if ((SHOWN_FIELDS as readonly string[]).includes(field)) {
      const supplier = enabled.find((check) => {
        const from = check.shows[field as ShownField];
        const value = from === undefined ? undefined : report.answers[check.name]?.fields[from];
        return value !== undefined && value !== null;
      });
      if (supplier) return supplier.name;
    }
    return enabled.find((check) => check.watches.includes(field))?.name;
  }

  /** The enabled check that produced a watched field of an answer (the first in order), if any. */
  sourceOf(field: string, checks: EnabledChecks): string | undefined {
    return this.enabled(checks).find((check) => check.watches.includes(field))?.name;
  }
}

function firstKnown(enabled: readonly CheckDefinition[], answers: NumberReport['answers'], field: ShownField): FieldValue | undefined {
  for (const check of enabled) {
    const from = check.shows[field];
    const value = from === undefined ? undefined : answers[check.name]?.fields[from];
    if (value !== undefined && value !== null) return value;
  }
  return undefined;
}
