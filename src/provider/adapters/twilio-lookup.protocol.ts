import { z } from 'zod';
import { ConnectionStatus, LineType } from '../port/lookup.types';

/**
 * The parts of Twilio Lookup v2 (docs/upstream-twilio-lookup.md lists each with its source) that the
 * adapter and its simulator (tools/twilio-simulator/) agree on: the path, the authentication, the
 * answer's schema and the two vocabularies we map. Free of Nest and I/O so both sides import it.
 */

/** The data packages we ask for, one per check. */
export type PackageName = 'line_status' | 'line_type_intelligence' | 'sim_swap';

/** `GET /v2/PhoneNumbers/{E.164}?Fields=<package>`: one data package per request, one per check. */
export function lookupPath(e164: string, fields?: PackageName): string {
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
 * The SIM Swap package: `last_sim_swap` with the date of the last change (where the operator's
 * country allows it to be told), and whether the SIM changed within `swapped_period` (an ISO 8601
 * duration, e.g. PT24H), with the carrier's codes.
 */
export const simSwapInfo = z.object({
  last_sim_swap: z
    .object({
      last_sim_swap_date: text.nullable().optional(),
      swapped_period: text.nullable().optional(),
      swapped_in_period: z.boolean().nullable().optional(),
    })
    .nullable()
    .optional(),
  carrier_name: text.nullable().optional(),
  mobile_country_code: text.nullable().optional(),
  mobile_network_code: text.nullable().optional(),
  error_code: nullableErrorCode,
});

/**
 * The phone-number resource. `valid` is Twilio's own validity verdict: read, never in place of our
 * numbering-plan check (see TWILIO_VALIDATION_ERRORS). A package asked for is an object, or null when
 * the upstream has no data for it (no coverage). Unknown extra fields are ignored.
 */
export const phoneNumberAnswer = z.object({
  phone_number: text.nullable().optional(),
  country_code: text.nullable().optional(),
  calling_country_code: text.nullable().optional(),
  national_format: text.nullable().optional(),
  valid: z.boolean(),
  validation_errors: z.array(text).nullable().optional(),
  line_status: lineStatusInfo.nullable().optional(),
  line_type_intelligence: lineTypeIntelligenceInfo.nullable().optional(),
  sim_swap: simSwapInfo.nullable().optional(),
});
export type PhoneNumberAnswer = z.infer<typeof phoneNumberAnswer>;

/** Twilio's error body: `{ code, message, more_info, status }`. */
export const twilioError = z.object({ code: z.number().int().optional(), message: text.optional(), status: z.number().int().optional() });

/**
 * Line Status words (case-insensitive) and our connection status, by Twilio's definitions
 * (docs/upstream-twilio-lookup.md, T2), side by side with the other providers' in docs/api.md:
 * - reachable: "the target handset is connected to the mobile network and reachable": CONNECTED;
 * - active: "valid and active (but not necessarily reachable)": the subscription exists, whether the
 *   handset is reachable now is not said. UNDETERMINED, the status that says the network could not
 *   tell: CONNECTED would call a switched-off phone live (hlr-lookups answers ABSENT for it);
 * - unreachable: "switched off or out of network reach", the HLR's absent subscriber: ABSENT;
 * - inactive: "isn't assigned to any subscriber on the mobile network", hlr-lookups' INVALID_MSISDN: ABSENT;
 * - unknown: "lack of connectivity with the target network operator or other exceptions": UNDETERMINED.
 * Any other word is not guessed: the lookup fails (refunded).
 */
export const LINE_STATUSES = {
  reachable: 'CONNECTED',
  active: 'UNDETERMINED',
  unreachable: 'ABSENT',
  inactive: 'ABSENT',
  unknown: 'UNDETERMINED',
} as const satisfies Record<string, ConnectionStatus>;
export type LineStatusWord = keyof typeof LINE_STATUSES;

/** The reasons Twilio gives for `valid: false` (twilio-oai's ValidationError); logged, any other word as "other". */
export const TWILIO_VALIDATION_ERRORS = ['TOO_SHORT', 'TOO_LONG', 'INVALID_BUT_POSSIBLE', 'INVALID_COUNTRY_CODE', 'INVALID_LENGTH', 'NOT_A_NUMBER'] as const;

/**
 * The `error_code` of a data package, by what it means for the number asked (docs/upstream-twilio-lookup.md
 * cites each entry of Twilio's error dictionary). `no_coverage`: this provider cannot answer this
 * number (the router asks the next provider offering the check, then refunds), never a statement about
 * the number; `query_failed`: the lookup of this number failed. A code not listed is `query_failed`.
 */
export const TWILIO_LOOKUP_ERRORS = {
  /** Canada: the account needs the CLNPC's authorization to get data on Canadian numbers. */
  60601: 'no_coverage',
  /** The package is not enabled on the account. */
  60606: 'query_failed',
  /** The number's country is not supported by the package. */
  60607: 'no_coverage',
  /** Twilio's own downstream provider replied with an error. */
  60608: 'query_failed',
  /** Outside Twilio's coverage: "not provisioned with any carrier or belonging to a carrier outside the scope of our data coverage". Either, so never read as ABSENT. */
  60610: 'no_coverage',
  /** The package answers mobile numbers only. */
  60612: 'no_coverage',
  /** Data residency: the number must be looked up in another Twilio region. */
  60614: 'no_coverage',
  /** The request cannot be completed in the selected Twilio region. */
  60619: 'no_coverage',
} as const satisfies Record<number, 'no_coverage' | 'query_failed'>;
export type TwilioLookupErrorCode = keyof typeof TWILIO_LOOKUP_ERRORS;

/** What a package's error_code means for the number (a code Twilio may add later: the lookup failed). */
export function lookupErrorKind(code: number): 'no_coverage' | 'query_failed' {
  return Object.hasOwn(TWILIO_LOOKUP_ERRORS, code) ? TWILIO_LOOKUP_ERRORS[code as TwilioLookupErrorCode] : 'query_failed';
}

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
