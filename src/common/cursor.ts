import { AppError } from './errors';

const MAX_BIGINT = 9_223_372_036_854_775_807n;

/**
 * Opaque keyset-pagination cursors: `<kind>:<id>` in base64url, where id is a positive bigint. The
 * kind keeps a cursor of one listing from being accepted by another.
 */
export function encodeCursor(kind: string, id: string): string {
  return Buffer.from(`${kind}:${id}`, 'utf8').toString('base64url');
}

/** The id inside a cursor this API returned for `kind`; 400 INVALID_REQUEST for anything else. */
export function decodeCursor(kind: string, cursor: string): string {
  const match = /^([a-z]+):([1-9]\d{0,18})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!/^[A-Za-z0-9_-]+$/.test(cursor) || !match || match[1] !== kind || BigInt(match[2]) > MAX_BIGINT) {
    throw new AppError('INVALID_REQUEST', 'cursor is not a cursor this API returned: pass next_cursor from the previous page.');
  }
  return match[2];
}
