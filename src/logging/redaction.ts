import { maskPhone } from '../common/phone';

/**
 * Phone numbers anywhere in a text: a `+` (plain or percent-encoded `%2B`, as in URLs), then 6 to 15
 * digits, the first not 0, which may be split the ways people write numbers and URLs encode them:
 * spaces, `-`, `.`, `(`, `)`, percent-encoded (`%20`, `%2D`, `%28`, `%29`) or form-encoded (`+`).
 * Requiring the leading `+` keeps request ids, ledger ids and durations (bare digit runs) readable.
 */
const SEPARATOR = String.raw`(?:[\s\-.()+]|%(?:20|2D|28|29|2E|2B))`;
const PHONE_IN_TEXT = new RegExp(String.raw`(\+|%2B)([1-9](?:${SEPARATOR}*\d){5,14})(?![\d*])`, 'gi');

/**
 * THE masker of logged text: every phone number → its digits with the last four hidden, the rule of
 * maskPhone (`+44 7400 123456` → `+44740012****`, `%2B44%207400%20123456` → `%2B44740012****`).
 * Every log line goes through it (pino's hooks in pino-options.ts); the ledger stores maskPhone's form.
 */
export function maskPhonesIn(text: string): string {
  return text.replace(PHONE_IN_TEXT, (_match, plus: string, written: string) => {
    const digits = written.replace(/%[0-9a-f]{2}/gi, '').replace(/\D/g, '');
    return plus + maskPhone(`+${digits}`).slice(1);
  });
}

/** The same for the string fields of a log object, and of the objects in it (an error's cause, a driver error). */
export function maskPhonesInFields<T extends Record<string, unknown>>(fields: T, depth = 3): T {
  let masked: Record<string, unknown> | undefined;
  for (const [key, value] of Object.entries(fields)) {
    let clean: unknown = value;
    if (typeof value === 'string') clean = maskPhonesIn(value);
    else if (depth > 0 && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      clean = maskPhonesInFields(value as Record<string, unknown>, depth - 1);
    }
    if (clean !== value) (masked ??= { ...fields })[key] = clean;
  }
  return (masked ?? fields) as T;
}

/** Header names whose values are secrets, should a request or response ever be logged whole. */
export const SECRET_HEADERS = ['authorization', 'cookie', 'set-cookie', 'x-api-key', 'proxy-authorization'];
