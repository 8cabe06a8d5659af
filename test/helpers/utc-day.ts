import type { DataSource } from 'typeorm';

/** How near the next UTC midnight a test of the daily allowance may start: longer than any such test runs. */
export const UTC_DAY_MARGIN_MS = 90_000;

/**
 * Waits until just past the next 00:00 UTC when it is nearer than `marginMs`, by the database's clock
 * (the one a charge's day is counted by). A test of the daily spending limit charges, refunds and
 * reads `spent_today` within one UTC day: one that straddles midnight sees the allowance reset under it.
 * For a `beforeEach`, with a timeout above `marginMs`.
 */
export async function clearOfUtcMidnight(db: DataSource, marginMs = UTC_DAY_MARGIN_MS): Promise<void> {
  const [{ left }]: Array<{ left: string }> = await db.query(
    `SELECT extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day' - now() AT TIME ZONE 'UTC') * 1000 AS left`,
  );
  if (Number(left) < marginMs) await new Promise((resolve) => setTimeout(resolve, Number(left) + 1_000));
}
