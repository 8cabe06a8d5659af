import { createHmac } from 'node:crypto';
import { ConnectionStatus, LINE_TYPES, LineType } from '../port/lookup.types';

/**
 * The parts of the HLR Lookups API v2 protocol (hlr-lookups.com) that the adapter and the upstream
 * simulator must agree on: endpoint paths, request signing, operator names and the number-type
 * vocabulary (the answer shapes are in hlr-lookups.schema.ts). Kept free of Nest and I/O so both
 * sides import the same definitions; docs/upstream-hlr-lookups.md says where each comes from.
 */
export const HLR_PATHS = {
  hlrLookup: '/hlr-lookup',
  ntLookup: '/nt-lookup',
  mnpLookup: '/mnp-lookup',
  authTest: '/auth-test',
  balance: '/balance',
  ping: '/ping',
  time: '/time',
} as const;

export const DIGEST_HEADERS = {
  key: 'x-digest-key',
  timestamp: 'x-digest-timestamp',
  signature: 'x-digest-signature',
} as const;

/**
 * Hex HMAC-SHA256 with the API secret over `path + timestamp + METHOD + body`.
 * `path` is the endpoint path below the API base (e.g. `/hlr-lookup`), `timestamp` unix seconds,
 * `body` the exact JSON text sent (empty for GET).
 */
export function digestSignature(secret: string, path: string, timestamp: number, method: string, body: string): string {
  return createHmac('sha256', secret).update(`${path}${timestamp}${method.toUpperCase()}${body}`).digest('hex');
}

export function digestHeaders(
  credentials: { key: string; secret: string },
  path: string,
  method: string,
  body: string,
  nowMs = Date.now(),
): Record<string, string> {
  const timestamp = Math.floor(nowMs / 1000);
  return {
    'X-Digest-Key': credentials.key,
    'X-Digest-Timestamp': String(timestamp),
    'X-Digest-Signature': digestSignature(credentials.secret, path, timestamp, method, body),
  };
}

/**
 * The HLR's `connectivity_status` words and our connection status, by hlr-lookups' definitions
 * (docs/upstream-hlr-lookups.md, D3), side by side with the other providers' in docs/api.md:
 * CONNECTED "the target handset is currently connected to the mobile network"; ABSENT "switched off or
 * out of network reach"; INVALID_MSISDN "not currently assigned to any subscriber on the mobile network"
 * (what the network says, like Twilio's inactive: ABSENT, carrier null); UNDETERMINED "could not be
 * determined". The schema refuses any other word (hlr-lookups.schema.ts): never guessed.
 */
export const HLR_CONNECTIVITY_STATUSES = {
  CONNECTED: 'CONNECTED',
  ABSENT: 'ABSENT',
  INVALID_MSISDN: 'ABSENT',
  UNDETERMINED: 'UNDETERMINED',
} as const satisfies Record<string, ConnectionStatus>;

/** The longest brand we keep, in code points (a cut never splits a character). */
const MAX_BRAND_CODE_POINTS = 120;

/**
 * The brand a customer expects from an upstream network name. The upstream appends its own routing
 * detail to some names (the documented MNP example says "T-Mobile US:6529 - SVR/2"): everything from
 * a colon followed by digits is that detail. The name is stored as jsonb, which refuses NUL and lone
 * surrogates, and shown to clients: control and format characters (\p{Cc}, \p{Cf}: zero-width spaces,
 * bidi overrides) go, a lone surrogate becomes U+FFFD, and the result is cut to 120 code points.
 * Null when nothing visible is left.
 */
export function brandName(upstreamName: string | null | undefined): string | null {
  if (typeof upstreamName !== 'string') return null;
  const cleaned = upstreamName
    .toWellFormed()
    .replace(/[\p{Cc}\p{Cf}]/gu, '')
    .trim()
    .replace(/\s*:\s*\d+(\s*-.*)?$/, '')
    .trim();
  const brand = Array.from(cleaned).slice(0, MAX_BRAND_CODE_POINTS).join('').trim();
  return brand !== '' ? brand : null;
}

/**
 * The upstream's number_type words and the contract's LineType (libphonenumber's types) they mean.
 * Upstream → LineType:
 *   LANDLINE → FIXED_LINE, MOBILE → MOBILE, MOBILE_OR_LANDLINE → FIXED_LINE_OR_MOBILE,
 *   TOLLFREE → TOLL_FREE, PREMIUM → PREMIUM_RATE, SHARED_COST → SHARED_COST, VOIP → VOIP,
 *   PERSONAL → PERSONAL_NUMBER, PAGING → PAGER, UAN → UAN, VOICEMAIL → VOICEMAIL,
 *   SATELLITE → MOBILE (libphonenumber files satellite ranges as mobile), UNKNOWN → UNKNOWN.
 * Any word not listed (the upstream may add some) is UNKNOWN, never an error; the contract's own
 * names (e.g. FIXED_LINE) are accepted too, case-insensitively.
 */
export const UPSTREAM_NUMBER_TYPES = {
  LANDLINE: 'FIXED_LINE',
  MOBILE: 'MOBILE',
  MOBILE_OR_LANDLINE: 'FIXED_LINE_OR_MOBILE',
  TOLLFREE: 'TOLL_FREE',
  PREMIUM: 'PREMIUM_RATE',
  SHARED_COST: 'SHARED_COST',
  VOIP: 'VOIP',
  PERSONAL: 'PERSONAL_NUMBER',
  PAGING: 'PAGER',
  UAN: 'UAN',
  VOICEMAIL: 'VOICEMAIL',
  SATELLITE: 'MOBILE',
  UNKNOWN: 'UNKNOWN',
} as const satisfies Record<string, LineType>;
export type UpstreamNumberType = keyof typeof UPSTREAM_NUMBER_TYPES;

const CONTRACT_NAMES: ReadonlySet<string> = new Set(LINE_TYPES);

/** Whether a number_type is one of the words above (or a contract name): anything else is read as UNKNOWN. */
export function isKnownNumberType(numberType: unknown): boolean {
  if (typeof numberType !== 'string') return false;
  const word = numberType.trim().toUpperCase();
  return word in UPSTREAM_NUMBER_TYPES || CONTRACT_NAMES.has(word);
}

export function lineTypeFromUpstream(numberType: unknown): LineType {
  if (typeof numberType !== 'string') return 'UNKNOWN';
  const word = numberType.trim().toUpperCase();
  if (word in UPSTREAM_NUMBER_TYPES) return UPSTREAM_NUMBER_TYPES[word as UpstreamNumberType];
  return CONTRACT_NAMES.has(word) ? (word as LineType) : 'UNKNOWN';
}

/** The word the upstream (the simulator) uses for a libphonenumber type: the inverse of the table above. */
export function upstreamNumberType(lineType: LineType): UpstreamNumberType {
  const found = (Object.keys(UPSTREAM_NUMBER_TYPES) as UpstreamNumberType[]).find(
    (word) => word !== 'SATELLITE' && UPSTREAM_NUMBER_TYPES[word] === lineType,
  );
  return found ?? 'UNKNOWN';
}
