import { decodeCursor, encodeCursor } from './cursor';

export interface KeysetPage<T> {
  rows: T[];
  /** The cursor of the next (older) page; null on the last page. */
  nextCursor: string | null;
}

/**
 * The key every row is below when a page has no cursor yet (the largest bigint), for the SQL of a
 * page: `key < COALESCE($cursor, NO_KEY_ABOVE)`, a condition the index reads instead of a filter.
 */
export const NO_KEY_ABOVE = '9223372036854775807';

/*
 * The SQL of one owner's page (an account's ledger, jobs, events, watchlists; a watchlist's entries and
 * changes; a target's audit trail) reads the owner's part of an index whose first column is the owner and
 * second the key, and nothing else, however many rows other owners have:
 *
 *   WHERE owner = ANY(ARRAY[$owner]) AND key < COALESCE($cursor, NO_KEY_ABOVE)
 *   ORDER BY owner, key DESC            -- the index's own order: (owner, key DESC); (owner, key): owner DESC
 *
 * Why not `owner = $owner ... ORDER BY key DESC`: PostgreSQL then drops the owner from the order (it is
 * one value) and may walk the primary key backwards, filtering by owner, when the statistics say the
 * owner holds most rows: if its rows are the oldest, it reads and discards every newer row of every other
 * owner first (issue 38: a 100,000-entry watchlist's page read 10,056 entries of other lists). An
 * `= ANY` keeps the owner in the order, which only the owner's index gives. Proven on every page by
 * test/medium/keyset-pages.medium-spec.ts (EXPLAIN on tables where the wrong plan is the cheaper guess).
 */

/**
 * One page of a newest-first listing by a bigint key: asks for one row more than `limit` to know
 * whether another page follows, and turns the last row's key into the opaque cursor of `kind`.
 * A cursor of another listing (or none this API returned) is 400 INVALID_REQUEST.
 */
export async function keysetPage<T>(
  kind: string,
  limit: number,
  cursor: string | undefined,
  fetch: (limit: number, beforeKey: string | undefined) => Promise<T[]>,
  keyOf: (row: T) => string,
): Promise<KeysetPage<T>> {
  const beforeKey = cursor === undefined ? undefined : decodeCursor(kind, cursor);
  const fetched = await fetch(limit + 1, beforeKey);
  const rows = fetched.slice(0, limit);
  return { rows, nextCursor: fetched.length > limit ? encodeCursor(kind, keyOf(rows[rows.length - 1])) : null };
}
