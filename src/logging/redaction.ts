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

/**
 * The secrets this service issues, whole: an API key (`pf_live_` + base62) and a webhook secret
 * (`whsec_` + base64url, whose alphabet has `-` and `_`: stopping at either leaked the rest). The
 * prefix stays so the line still says what it was; everything after it that could belong to the
 * secret is dropped.
 */
const SECRET_IN_TEXT = /(whsec|pf_live)_[0-9A-Za-z_-]+/g;

/**
 * Secrets of the deployment (ADMIN_TOKEN, METRICS_TOKEN): chosen by people, with no prefix to find
 * them by, so their exact values are removed wherever they appear. Set once at start-up.
 */
let literalSecrets: readonly string[] = [];

export function redactLiteralSecrets(secrets: Array<string | undefined>): void {
  // Longest first, so a token that contains another is removed whole.
  literalSecrets = [...new Set(secrets.filter((secret): secret is string => typeof secret === 'string' && secret.length > 0))].sort(
    (a, b) => b.length - a.length,
  );
}

/** THE masker of every logged string: our secrets redacted, phone numbers masked (maskPhonesIn). */
export function maskText(text: string): string {
  let masked = maskPhonesIn(text).replace(SECRET_IN_TEXT, '$1_[redacted]');
  for (const secret of literalSecrets) if (masked.includes(secret)) masked = masked.split(secret).join('[redacted]');
  return masked;
}

/**
 * What a database driver error carries of the data itself: PostgreSQL's `detail` ("Failing row
 * contains (…)" with every column of the row, secrets included; "Key (…)=(…)"), `where`, the query's
 * bound `parameters`. Never logged: the code, constraint, table and column say what failed.
 */
const DRIVER_DATA_FIELDS = ['detail', 'where', 'parameters', 'internalQuery'];

/** A pg DatabaseError (it has `severity`) or TypeORM's QueryFailedError around one (`driverError`), as logged. */
function isDriverError(fields: Record<string, unknown>): boolean {
  return 'severity' in fields || 'driverError' in fields;
}

/**
 * maskText on the string fields of a log object, of the objects in it (an error's cause, a driver
 * error) and of the arrays in them (a query's parameters, should one slip through).
 */
export function maskFields<T extends Record<string, unknown>>(fields: T, depth = 3, driverError = isDriverError(fields)): T {
  let masked: Record<string, unknown> | undefined;
  if (driverError) {
    for (const key of DRIVER_DATA_FIELDS) if (key in fields) delete (masked ??= copyOf(fields))[key];
  }
  for (const [key, value] of Object.entries(fields)) {
    if (masked && !(key in masked)) continue;
    const clean = key === 'driverError' && isRecord(value) && depth > 0 ? maskFields(value, depth - 1, true) : maskValue(value, depth);
    if (clean !== value) (masked ??= copyOf(fields))[key] = clean;
  }
  return (masked ?? fields) as T;
}

/** A copy with the same prototype and property descriptors: pino's serialized errors keep `type` where a spread loses it. */
function copyOf(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.create(Object.getPrototypeOf(fields), Object.getOwnPropertyDescriptors(fields)) as Record<string, unknown>;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function maskValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return maskText(value);
  if (depth <= 0 || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const items = value.map((item) => maskValue(item, depth - 1));
    return items.some((item, i) => item !== value[i]) ? items : value;
  }
  return maskFields(value as Record<string, unknown>, depth - 1);
}

/** Header names whose values are secrets, should a request or response ever be logged whole. */
export const SECRET_HEADERS = ['authorization', 'cookie', 'set-cookie', 'x-api-key', 'proxy-authorization'];
