import { createHmac } from 'node:crypto';
import { LINE_TYPES, LineType } from '../lookup.types';

/**
 * The parts of the HLR Lookups API v2 protocol (hlr-lookups.com) that the adapter and the upstream
 * simulator must agree on: endpoint paths, request signing, response shapes and the number-type
 * vocabulary. Kept free of Nest and I/O so both sides import the same definitions.
 */
export const HLR_PATHS = {
  hlrLookup: '/hlr-lookup',
  ntLookup: '/nt-lookup',
  mnpLookup: '/mnp-lookup',
  authTest: '/auth-test',
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

export type UpstreamConnectivityStatus = 'CONNECTED' | 'ABSENT' | 'INVALID_MSISDN' | 'UNDETERMINED';

/** POST /hlr-lookup `{ msisdn }` (the fields we read, plus a few the real API also sends). */
export interface HlrLookupResponse {
  id: string;
  msisdn: string;
  connectivity_status: UpstreamConnectivityStatus;
  mccmnc: string | null;
  original_network_name: string | null;
  original_country_code: string | null;
  is_ported: boolean;
  ported_network_name: string | null;
  is_roaming: boolean;
  timestamp: string;
}

/** POST /nt-lookup `{ number }`. */
export interface NtLookupResponse {
  id: string;
  number: string;
  number_type: string;
  query_status: 'OK' | 'FAILED';
  is_valid: boolean;
  original_network_name: string | null;
  original_country_code: string | null;
  timestamp: string;
}

/** POST /mnp-lookup `{ msisdn }`. */
export interface MnpLookupResponse {
  id: string;
  msisdn: string;
  query_status: 'OK' | 'FAILED';
  is_ported: boolean;
  original_network_name: string | null;
  ported_network_name: string | null;
  timestamp: string;
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
