import { maskPhone } from '../common/phone';

/**
 * E.164 numbers anywhere in a text, with the `+` plain or percent-encoded (`%2B`, as in URLs).
 * Requiring the `+` keeps request ids, ledger ids and durations (bare digit runs) readable.
 */
const PHONE_IN_TEXT = /(\+|%2B)([1-9]\d{5,14})(?![\d*])/gi;

/** Masks every phone number in a log text: `+447700900123` → `+44770090****` (the ledger and the logs never show a whole number). */
export function maskPhonesIn(text: string): string {
  return text.replace(PHONE_IN_TEXT, (_match, plus: string, digits: string) => plus + maskPhone(`+${digits}`).slice(1));
}

/** The same for the string fields of a log object (one level deep: what our log calls produce). */
export function maskPhonesInFields<T extends Record<string, unknown>>(fields: T): T {
  let masked: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(fields)) {
    if (typeof value !== 'string') continue;
    const clean = maskPhonesIn(value);
    if (clean !== value) (masked ??= { ...fields })[key] = clean;
  }
  return (masked ?? fields) as T;
}

/** Header names whose values are secrets, should a request or response ever be logged whole. */
export const SECRET_HEADERS = ['authorization', 'cookie', 'set-cookie', 'x-api-key', 'proxy-authorization'];
