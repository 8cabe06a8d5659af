import { AsYouType } from 'libphonenumber-js/max';
/** Spaces, `-`, `.`, `(` and `)` may separate the digits; they are dropped before the rule is checked. */
const IGNORED_SEPARATORS = /[\s\-.()]/g;
/** E.164: "+", then 2 to 15 digits, the first not 0. The one statement of the rule in the service. */
const E164 = /^\+[1-9]\d{1,14}$/;

export const E164_MESSAGE = 'phone must be in E.164 format: "+" then 2 to 15 digits, the first not 0, e.g. +447400123456';

/**
 * The E.164 message with the way out for the two usual mistakes, without repeating the number (personal
 * data): `0044…` (an international prefix) and `07400 …` (a national number).
 */
export function e164Message(value: unknown): string {
  if (typeof value !== 'string') return E164_MESSAGE;
  const compact = value.replace(IGNORED_SEPARATORS, '');
  const afterPrefix = /^00([1-9]\d{1,14})$/.exec(compact)?.[1];
  if (afterPrefix) {
    const asYouType = new AsYouType();
    asYouType.input(`+${afterPrefix}`);
    const code = asYouType.getCallingCode();
    return `${E164_MESSAGE}. It starts with 00, an international prefix: write it with "+" instead of 00, as +${code ?? ''}…`;
  }
  if (/^0[1-9]\d{4,}$/.test(compact)) {
    return `${E164_MESSAGE}. It is a national number (a leading 0): write it with "+" and the country code instead of the 0, e.g. for the UK write it as +44… (07400 123456 is +447400123456)`;
  }
  return E164_MESSAGE;
}

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
