import type { CheckName, EnabledChecks } from '../checks/checks';
import type { FilterResultDto } from '../provider/dto/filter-result.dto';

export const WATCH_INTERVALS = ['daily', 'weekly', 'monthly'] as const;
export type WatchInterval = (typeof WATCH_INTERVALS)[number];

/** The fields of an answer whose difference from the last answer is a change (docs: README "Watchlists"). */
export const WATCHED_FIELDS = ['status', 'carrier', 'line_type', 'is_ported', 'valid'] as const;
export type WatchedField = (typeof WATCHED_FIELDS)[number];

export interface FieldChange {
  field: WatchedField;
  before: string | boolean | null;
  after: string | boolean | null;
}

/** An answer and the checks that produced it; checks null when not known (answers stored before they were kept). */
export interface AnswerWithChecks {
  result: FilterResultDto;
  checks: EnabledChecks | null;
}

/**
 * Which check produced a field (src/provider/answer.ts): a disabled check leaves its fields at neutral
 * values, which are not news. The carrier comes from the network check, else from portability.
 */
function sourceOf(field: WatchedField, checks: EnabledChecks): CheckName | undefined {
  if (field === 'status' || field === 'valid') return checks.network_status ? 'network_status' : undefined;
  if (field === 'line_type') return checks.line_type ? 'line_type' : undefined;
  if (field === 'is_ported') return checks.portability ? 'portability' : undefined;
  return checks.network_status ? 'network_status' : checks.portability ? 'portability' : undefined;
}

/** A field is compared only when the same enabled check produced it in both answers. */
function comparable(field: WatchedField, before: EnabledChecks | null, after: EnabledChecks): boolean {
  if (!before) return true;
  const source = sourceOf(field, after);
  return source !== undefined && source === sourceOf(field, before);
}

/**
 * What changed between the last answer and this one; nothing for the first answer (it is the
 * baseline), and nothing in fields whose check was off in either round.
 */
export function changesBetween(before: AnswerWithChecks | null, after: { result: FilterResultDto; checks: EnabledChecks }): FieldChange[] {
  if (!before) return [];
  return WATCHED_FIELDS.filter((field) => comparable(field, before.checks, after.checks) && before.result[field] !== after.result[field]).map((field) => ({
    field,
    before: before.result[field],
    after: after.result[field],
  }));
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
