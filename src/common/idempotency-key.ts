import { AppError } from './errors';

const KEY_SHAPE = /^[\x20-\x7E]{1,255}$/;

/** The `Idempotency-Key` request header of every route that takes one: 1 to 255 printable ASCII characters. */
export function validateIdempotencyKey(key: string | undefined): string | undefined {
  if (key === undefined) return undefined;
  if (!KEY_SHAPE.test(key)) throw new AppError('INVALID_REQUEST', 'Idempotency-Key must be 1 to 255 printable ASCII characters.');
  return key;
}

/** The life of an Idempotency-Key: a retry within it is answered, never charged again (docs/api.md). */
export const KEY_LIFE_HOURS = 24;
