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

/** What changed between the last answer and this one; nothing for the first answer (it is the baseline). */
export function changesBetween(before: FilterResultDto | null, after: FilterResultDto): FieldChange[] {
  if (!before) return [];
  return WATCHED_FIELDS.filter((field) => before[field] !== after[field]).map((field) => ({ field, before: before[field], after: after[field] }));
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
