import { decodeCursor, encodeCursor } from './cursor';

export interface KeysetPage<T> {
  rows: T[];
  /** The cursor of the next (older) page; null on the last page. */
  nextCursor: string | null;
}

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
