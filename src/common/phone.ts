/** Spaces, `-`, `.`, `(` and `)` may separate the digits; they are dropped before the rule is checked. */
const IGNORED_SEPARATORS = /[\s\-.()]/g;
/** E.164: "+", then 2 to 15 digits, the first not 0. The one statement of the rule in the service. */
const E164 = /^\+[1-9]\d{1,14}$/;

export const E164_MESSAGE = 'phone must be in E.164 format: "+" then 2 to 15 digits, the first not 0, e.g. +14155552671';

/** True for a number already in E.164 form (no separators). */
export function isE164(text: string): boolean {
  return E164.test(text);
}

/** The number without its separators when what remains is E.164 (docs/api.md), otherwise undefined. */
export function normalizePhone(raw: string): string | undefined {
  const compact = raw.replace(IGNORED_SEPARATORS, '');
  return isE164(compact) ? compact : undefined;
}

/** `+14155552671` → `+1415555****`: what the ledger stores and logs may show. */
export function maskPhone(e164: string): string {
  const digits = e164.length - 1;
  const hidden = Math.min(4, Math.max(1, digits - 2));
  return e164.slice(0, e164.length - hidden) + '*'.repeat(hidden);
}
