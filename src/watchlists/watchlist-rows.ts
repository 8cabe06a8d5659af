import type { ReportedAnswer } from '../checks/phone-answer.dto';
import type { StoredProvenance } from '../checks/provenance';
import type { WatchedField, WatchInterval } from './watch-rules';

/** The rows of watchlists and their rounds, entries and changes, as the repositories map them. */
export type StoredStatus = 'active' | 'paused' | PausedStatus;
/** The pauses a round refused by the ledger causes (by the balance, by the daily spending cap). */
export type PausedStatus = 'paused_insufficient_credits' | 'paused_spending_limit';

export interface Watchlist {
  id: string;
  seq: string;
  accountId: string;
  name: string | null;
  interval: WatchInterval;
  callbackUrl: string | null;
  status: StoredStatus;
  total: number;
  round: number;
  roundRunning: boolean;
  nextCheckAt: Date;
  createdAt: Date;
}

export interface RoundRow {
  round: number;
  trigger: 'schedule' | 'manual';
  costPerNumber: number;
  checked: number;
  failed: number;
  changes: number;
  startedAt: Date;
  completedAt: Date | null;
}

export interface EntryRow {
  id: string;
  phone: string;
  reference: string | null;
  result: ReportedAnswer | null;
  /** Which provider answered each check of `result`, and when (null before the first answer, or for answers kept before it was). */
  answeredBy: StoredProvenance | null;
  error: string | null;
  checkedAt: Date | null;
}

export interface ChangeRow {
  id: string;
  phone: string;
  reference: string | null;
  field: WatchedField;
  before: string | boolean | null;
  after: string | boolean | null;
  /** The provider that gave the new value (its check's answer) and when; null for changes found before it was kept. */
  answeredBy: StoredProvenance[string] | null;
  round: number;
  detectedAt: Date;
}

export function toWatchlist(row: Record<string, unknown>): Watchlist {
  return {
    id: row.id as string,
    seq: String(row.seq),
    accountId: row.account_id as string,
    name: row.name as string | null,
    interval: row.interval as WatchInterval,
    callbackUrl: row.callback_url as string | null,
    status: row.status as StoredStatus,
    total: Number(row.total),
    round: Number(row.round),
    roundRunning: row.round_running as boolean,
    nextCheckAt: row.next_check_at as Date,
    createdAt: row.created_at as Date,
  };
}

export function toRound(row: Record<string, unknown>): RoundRow {
  return {
    round: Number(row.round),
    trigger: row.trigger as 'schedule' | 'manual',
    costPerNumber: Number(row.cost_per_number),
    checked: Number(row.checked),
    failed: Number(row.failed),
    changes: Number(row.changes),
    startedAt: row.started_at as Date,
    completedAt: row.completed_at as Date | null,
  };
}

export function toChange(row: Record<string, unknown>): ChangeRow {
  return {
    id: String(row.id),
    phone: row.phone as string,
    reference: row.reference as string | null,
    field: row.field as WatchedField,
    before: row.before as string | boolean | null,
    after: row.after as string | boolean | null,
    answeredBy: (row.answered_by as StoredProvenance[string] | null) ?? null,
    round: Number(row.round),
    detectedAt: row.detected_at as Date,
  };
}
