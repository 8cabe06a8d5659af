import type { CheckRegistry } from '../checks/check-registry';
import type { EnabledChecks } from '../checks/checks';
import type { ReportedAnswer } from '../checks/phone-answer.dto';

export const WATCH_INTERVALS = ['daily', 'weekly', 'monthly'] as const;
export type WatchInterval = (typeof WATCH_INTERVALS)[number];

/** A field of an answer that watchlists compare: which ones, each check's definition says (`watches`). */
export type WatchedField = string;

export interface FieldChange {
  field: WatchedField;
  before: string | number | boolean | null;
  after: string | number | boolean | null;
}

/** An answer and the checks that produced it; checks null when not known (answers stored before they were kept). */
export interface AnswerWithChecks {
  result: ReportedAnswer;
  checks: EnabledChecks | null;
}

/**
 * What a watchlist reports as a change, from the checks' definitions: each check names the fields it
 * watches; a disabled check leaves its fields at neutral values, which are not news.
 */
export class WatchRules {
  constructor(private readonly registry: CheckRegistry) {}

  /**
   * What changed between the last answer and this one; nothing for the first answer (it is the
   * baseline), and nothing in fields whose producing check differs between the rounds (off in one, or
   * another check supplied it: the carrier comes from the first enabled check that knows it).
   */
  changesBetween(before: AnswerWithChecks | null, after: { result: ReportedAnswer; checks: EnabledChecks }): FieldChange[] {
    if (!before) return [];
    return this.registry
      .watchedFields()
      .filter((field) => this.comparable(field, before.checks, after.checks) && (before.result[field] ?? null) !== (after.result[field] ?? null))
      .map((field) => ({ field, before: before.result[field] ?? null, after: after.result[field] ?? null }));
  }

  /** A field is compared only when the same enabled check produced it in both answers. */
  private comparable(field: WatchedField, before: EnabledChecks | null, after: EnabledChecks): boolean {
    if (!before) return true;
    const source = this.registry.sourceOf(field, after);
    return source !== undefined && source === this.registry.sourceOf(field, before);
  }
}

/**
 * When the round after one started at `startedAt` is due: a day, a week, or a calendar month later
 * (UTC; the 31st of a month is followed by the last day of a shorter month).
 */
export function nextCheckAt(startedAt: Date, interval: WatchInterval): Date {
  const next = new Date(startedAt);
  if (interval === 'daily') next.setUTCDate(next.getUTCDate() + 1);
  else if (interval === 'weekly') next.setUTCDate(next.getUTCDate() + 7);
  else {
    const day = next.getUTCDate();
    next.setUTCDate(1);
    next.setUTCMonth(next.getUTCMonth() + 1);
    const lastDay = new Date(Date.UTC(next.getUTCFullYear(), next.getUTCMonth() + 1, 0)).getUTCDate();
    next.setUTCDate(Math.min(day, lastDay));
  }
  return next;
}

/** The ledger `source` of a round's charges and refunds: /usage shows a round's rows under one name. */
export function roundSource(watchlistId: string, round: number): string {
  return `watchlist-${watchlistId}-round-${round}`;
}

/** The charge reference of one entry in one round: unique in the ledger, so an entry is charged once per round. */
export function roundChargeReference(watchlistId: string, round: number, entryId: string): string {
  return `watchlist:${watchlistId}:${round}:${entryId}`;
}
