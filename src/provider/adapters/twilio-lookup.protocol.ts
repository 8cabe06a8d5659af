import { z } from 'zod';
import { ConnectionStatus, LineType } from '../port/lookup.types';

/**
 * The parts of Twilio Lookup v2 (docs/upstream-twilio-lookup.md lists each with its source) that the
 * adapter and its simulator (tools/twilio-simulator/) agree on: the path, the authentication, the
 * answer's schema and the two vocabularies we map. Free of Nest and I/O so both sides import it.
 */

/** `GET /v2/PhoneNumbers/{E.164}?Fields=<package>`: one data package per request, one per check. */
export function lookupPath(e164: string, fields?: 'line_status' | 'line_type_intelligence'): string {
  return `/v2/PhoneNumbers/${encodeURIComponent(e164)}${fields ? `?Fields=${fields}` : ''}`;
}

/** HTTP Basic with the Account SID (or an API key SID) and its auth token (or the key's secret). */
export function basicAuthorization(credentials: { key: string; secret: string }): string {
  return `Basic ${Buffer.from(`${credentials.key}:${credentials.secret}`).toString('base64')}`;
}

const text = z.string();
const nullableErrorCode = z.number().int().nullable().optional();

/** The Line Status package: `status` and `error_code` (a code when the status could not be had). */
export const lineStatusInfo = z.object({ status: text.nullable().optional(), error_code: nullableErrorCode });
/** The Line Type Intelligence package. */
export const lineTypeIntelligenceInfo = z.object({
  type: text.nullable().optional(),
  carrier_name: text.nullable().optional(),
  mobile_country_code: text.nullable().optional(),
  mobile_network_code: text.nullable().optional(),
  error_code: nullableErrorCode,
});

/**
 * The phone-number resource. `valid` is read; a package asked for is an object, or null when the
 * upstream has no data for it (no coverage). Unknown extra fields are ignored.
 */
export const phoneNumberAnswer = z.object({
  phone_number: text.nullable().optional(),
  country_code: text.nullable().optional(),
  calling_country_code: text.nullable().optional(),
  valid: z.boolean(),
  validation_errors: z.array(text).nullable().optional(),
  line_status: lineStatusInfo.nullable().optional(),
  line_type_intelligence: lineTypeIntelligenceInfo.nullable().optional(),
});
export type PhoneNumberAnswer = z.infer<typeof phoneNumberAnswer>;

/** Twilio's error body: `{ code, message, more_info, status }`. */
export const twilioError = z.object({ code: z.number().int().optional(), message: text.optional(), status: z.number().int().optional() });

/**
 * Line Status words (case-insensitive) and our connection status: active and reachable → CONNECTED,
 * unreachable (the HLR's absent subscriber) and inactive (not in service) → ABSENT, unknown →
 * UNDETERMINED. Any other word is not guessed: the lookup fails (refunded).
 */
export const LINE_STATUSES = {
  active: 'CONNECTED',
  reachable: 'CONNECTED',
  unreachable: 'ABSENT',
  inactive: 'ABSENT',
  unknown: 'UNDETERMINED',
} as const satisfies Record<string, ConnectionStatus>;

/** Line Type Intelligence `type` words and the contract's LineType; any other word fails the lookup. */
export const TWILIO_LINE_TYPES = {
  mobile: 'MOBILE',
  landline: 'FIXED_LINE',
  fixedVoip: 'VOIP',
  nonFixedVoip: 'VOIP',
  personal: 'PERSONAL_NUMBER',
  tollFree: 'TOLL_FREE',
  premium: 'PREMIUM_RATE',
  sharedCost: 'SHARED_COST',
  uan: 'UAN',
  voicemail: 'VOICEMAIL',
  pager: 'PAGER',
  unknown: 'UNKNOWN',
} as const satisfies Record<string, LineType>;

/** The word the simulator answers for a libphonenumber type (the inverse of the table above). */
export function twilioLineType(lineType: LineType): keyof typeof TWILIO_LINE_TYPES {
  if (lineType === 'FIXED_LINE_OR_MOBILE') return 'mobile';
  const found = (Object.keys(TWILIO_LINE_TYPES) as Array<keyof typeof TWILIO_LINE_TYPES>).find((word) => TWILIO_LINE_TYPES[word] === lineType);
  return found ?? 'unknown';
}
