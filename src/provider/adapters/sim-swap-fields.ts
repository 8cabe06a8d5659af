import type { FieldValue } from '../../checks/check-definition';

/**
 * The SIM swap check's fields (docs/api.md "SIM swap") from what an upstream says, whichever it is:
 * - the date of the last SIM change, when the operator tells it: `last_sim_swap_at` is that date and
 *   `sim_swapped` is whether it is within the account's window before now;
 * - otherwise a yes/no over a period the upstream checked (`swappedInPeriod` over `periodHours`): it
 *   answers for the window only where it can: a swap within a period no longer than the window is within
 *   the window; no swap within a period at least as long as the window is none within it. Anything else
 *   is not known (null), never guessed.
 */
export interface SimSwapEvidence {
  /** When the SIM last changed (null: not told). */
  lastChangeAt: Date | null;
  /** A yes/no over a period the upstream checked, when it gave one. */
  period?: { hours: number; swapped: boolean };
}

export function simSwapFields(evidence: SimSwapEvidence, now: Date, windowHours: number): Record<string, FieldValue> {
  const { lastChangeAt, period } = evidence;
  if (lastChangeAt !== null) {
    const hoursAgo = (now.getTime() - lastChangeAt.getTime()) / 3_600_000;
    return { sim_swapped: hoursAgo <= windowHours, last_sim_swap_at: lastChangeAt.toISOString() };
  }
  let swapped: boolean | null = null;
  if (period?.swapped === true && period.hours <= windowHours) swapped = true;
  if (period?.swapped === false && period.hours >= windowHours) swapped = false;
  return { sim_swapped: swapped, last_sim_swap_at: null };
}

/** The window of a lookup: the check's `window_hours` option (SettingsService resolves the default). */
export function windowHoursOf(options: Readonly<Record<string, number>>): number {
  const hours = options.window_hours;
  if (typeof hours !== 'number' || !Number.isFinite(hours) || hours <= 0) throw new Error('sim_swap is asked without its window_hours option');
  return hours;
}

/** An ISO 8601 duration of days, hours, minutes and seconds (`PT24H`, `P7D`, `PT15282H33M44S`) in hours; undefined otherwise. */
export function durationHours(text: string): number | undefined {
  const match = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(text);
  if (!match || text === 'P' || text.endsWith('T')) return undefined;
  const [, days = '0', hours = '0', minutes = '0', seconds = '0'] = match;
  return Number(days) * 24 + Number(hours) + Number(minutes) / 60 + Number(seconds) / 3600;
}
