import { z } from 'zod';
import { HLR_CONNECTIVITY_STATUSES } from './hlr-lookups.protocol';

/**
 * The answers of the HLR Lookups API v2 as documented (docs/upstream-hlr-lookups.md lists each field
 * and where it is documented). The adapter parses every answer with these before reading it, and the
 * upstream simulator builds its answers to these types, so the two cannot drift apart.
 *
 * Fields the adapter reads are required; the other documented fields are optional (the upstream may
 * leave them out) but type-checked when present. Unknown extra fields are ignored: the upstream may
 * add some without notice.
 */

/** `2020-08-07 19:16:17.676+0300` (HLR, MNP) and `2015-12-04 10:36:41.866283+00` (NT). */
export const UPSTREAM_TIMESTAMP = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{1,6})?[+-]\d{2}(:?\d{2})?$/;

/** A decimal amount sent as a string, e.g. `"0.0100"` (cost) or `"5878.24"` (balance). */
const decimalText = z.string().regex(/^\d+(\.\d+)?$/, 'expected a decimal amount as a string, e.g. "0.0100"');
const digits = z.string().regex(/^\d+$/, 'expected digits');
const countryCode = z.string().regex(/^[A-Z]{2}$/, 'expected an ISO 3166-1 alpha-2 code');
const countryPrefix = z.string().regex(/^\+\d+$/, 'expected "+" and digits');
const text = z.string();

type ConnectivityStatus = keyof typeof HLR_CONNECTIVITY_STATUSES;
/** The words of the mapping table (hlr-lookups.protocol.ts), so that the schema and the mapping cannot drift apart. */
export const CONNECTIVITY_STATUSES = Object.keys(HLR_CONNECTIVITY_STATUSES) as [ConnectivityStatus, ...ConnectivityStatus[]];
export const PROCESSING_STATUSES = ['COMPLETED', 'REJECTED', 'FAILED'] as const;
export const QUERY_STATUSES = ['OK', 'FAILED'] as const;

/** The fields shared by the answers that name a network (mccmnc and the original network). */
const networkFields = {
  mccmnc: digits.nullable().optional(),
  mcc: digits.nullable().optional(),
  mnc: digits.nullable().optional(),
  original_network_name: text.nullable(),
  original_country_name: text.nullable().optional(),
  original_country_code: countryCode.nullable().optional(),
  original_country_prefix: countryPrefix.nullable().optional(),
};

const portedFields = {
  ported_network_name: text.nullable(),
  ported_country_name: text.nullable().optional(),
  ported_country_code: countryCode.nullable().optional(),
  ported_country_prefix: countryPrefix.nullable().optional(),
};

const billingFields = {
  id: text,
  cost: decimalText,
  timestamp: z.string().regex(UPSTREAM_TIMESTAMP, 'expected a timestamp like 2020-08-07 19:16:17.676+0300').optional(),
  storage: text.nullable().optional(),
  route: text.nullable().optional(),
};

/** POST /hlr-lookup `{ msisdn }`. */
export const hlrLookupAnswer = z.object({
  ...billingFields,
  msisdn: text,
  connectivity_status: z.enum(CONNECTIVITY_STATUSES),
  processing_status: z.enum(PROCESSING_STATUSES),
  error_code: z.number().int().nullable(),
  ...networkFields,
  imsi: text.nullable().optional(),
  msin: text.nullable().optional(),
  msc: text.nullable().optional(),
  is_ported: z.boolean().nullable(),
  ...portedFields,
  is_roaming: z.boolean().nullable().optional(),
  roaming_network_name: text.nullable().optional(),
  roaming_country_name: text.nullable().optional(),
  roaming_country_code: countryCode.nullable().optional(),
  roaming_country_prefix: countryPrefix.nullable().optional(),
  data_source: text.nullable().optional(),
});
export type HlrLookupAnswer = z.infer<typeof hlrLookupAnswer>;

/** POST /nt-lookup `{ number }`. The number_type word is read by lineTypeFromUpstream (unknown words are UNKNOWN). */
export const ntLookupAnswer = z
  .object({
    ...billingFields,
    number: text,
    number_type: text.nullable(),
    query_status: z.enum(QUERY_STATUSES),
    is_valid: z.boolean().nullable(),
    invalid_reason: text.nullable().optional(),
    is_possibly_ported: z.boolean().nullable().optional(),
    is_vanity_number: z.boolean().nullable().optional(),
    qualifies_for_hlr_lookup: z.boolean().nullable().optional(),
    ...networkFields,
    original_network_name: text.nullable().optional(),
    regions: z.array(text).nullable().optional(),
    timezones: z.array(text).nullable().optional(),
    info_text: text.nullable().optional(),
    error_code: z.number().int().nullable().optional(),
  })
  .refine((answer) => answer.query_status !== 'OK' || (typeof answer.is_valid === 'boolean' && answer.number_type !== null), {
    message: 'an OK answer needs is_valid and number_type',
    path: ['is_valid'],
  });
export type NtLookupAnswer = z.infer<typeof ntLookupAnswer>;

/** POST /mnp-lookup `{ msisdn }`. */
export const mnpLookupAnswer = z
  .object({
    ...billingFields,
    msisdn: text,
    query_status: z.enum(QUERY_STATUSES),
    error_code: z.number().int().nullable(),
    ...networkFields,
    is_ported: z.boolean().nullable(),
    ...portedFields,
    extra: text.nullable().optional(),
  })
  .refine((answer) => answer.query_status !== 'OK' || typeof answer.is_ported === 'boolean', {
    message: 'an OK answer needs is_ported',
    path: ['is_ported'],
  });
export type MnpLookupAnswer = z.infer<typeof mnpLookupAnswer>;

/** GET /balance. */
export const balanceAnswer = z.object({ balance: decimalText });
export type BalanceAnswer = z.infer<typeof balanceAnswer>;

/** GET /time: the upstream's clock in unix seconds (the PHP SDK signs with it). */
export const timeAnswer = z.object({ time: z.number().int().positive() });
export type TimeAnswer = z.infer<typeof timeAnswer>;

/** GET /ping and GET /auth-test. */
export const successAnswer = z.object({ success: z.literal(true) });
export type SuccessAnswer = z.infer<typeof successAnswer>;

/**
 * The body of a 4xx/5xx answer. Only the HTTP status decides what the adapter does; the body is read
 * for the log line, so both spellings seen for it are accepted (strings, or objects with a message).
 */
export const errorAnswer = z.object({
  errors: z.array(z.union([text, z.object({ code: text.optional(), message: text.optional() })])).min(1),
});
export type ErrorAnswer = z.infer<typeof errorAnswer>;

/** Where a parsed answer broke, for one log line: `connectivity_status: Invalid option: ...`. */
export function firstIssue(error: z.ZodError): { field: string; problem: string } {
  const issue = error.issues[0];
  return { field: issue?.path.length ? issue.path.join('.') : '(body)', problem: issue?.message ?? 'does not match' };
}
