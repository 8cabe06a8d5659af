import { AppError } from './errors';

const IGNORED_SEPARATORS = /[\s\-.()]/g;
const E164 = /^\+[1-9]\d{1,14}$/;

export const E164_MESSAGE = 'phone must be in E.164 format: "+" then 2 to 15 digits, the first not 0, e.g. +14155552671';

/** Spaces, `-`, `.`, `(` and `)` are ignored; what remains must be E.164 (API.md section 3). */
export function normalizePhone(raw: string): string | undefined {
  const compact = raw.replace(IGNORED_SEPARATORS, '');
  return E164.test(compact) ? compact : undefined;
}

export function requireE164(raw: string): string {
  const e164 = normalizePhone(raw);
  if (!e164) throw new AppError('INVALID_REQUEST', `${E164_MESSAGE}.`);
  return e164;
}

/** `+14155552671` → `+1415555****`: what the ledger stores and logs may show. */
export function maskPhone(e164: string): string {
  const digits = e164.length - 1;
  const hidden = Math.min(4, Math.max(1, digits - 2));
  return e164.slice(0, e164.length - hidden) + '*'.repeat(hidden);
}
