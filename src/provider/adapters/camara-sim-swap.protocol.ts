import { z } from 'zod';
import type { UpstreamFailureKind } from '../port/upstream-failure';

/**
 * The parts of the CAMARA SimSwap API (docs/upstream-camara-sim-swap.md: the operators' open standard,
 * camaraproject/SimSwap, API version 2) that the adapter and its simulator (tools/camara-simulator/)
 * agree on: the paths under the operator's API root, the OAuth2 client-credentials token, the
 * answers' schemas and the error codes we read. Free of Nest and I/O so both sides import it.
 */

/** Below `<ID>_URL`, the operator's `{apiRoot}/sim-swap/v2`. */
export const CAMARA_PATHS = { retrieveDate: '/retrieve-date', check: '/check' } as const;

/** The longest period `check` takes (`maxAge`, hours: 1 to 2400, the API's own bounds). */
export const CAMARA_MAX_AGE_HOURS = 2400;

/** The scopes asked for with the token: one for each operation we call. */
export const CAMARA_SCOPES = 'sim-swap:retrieve-date sim-swap:check';

/** A token is renewed this long before the expiry its endpoint announced (a request in flight must not carry an expired one). */
export const TOKEN_EXPIRY_MARGIN_SECONDS = 30;
/** The lifetime assumed when the token endpoint does not say (`expires_in` is only RECOMMENDED by RFC 6749). */
export const TOKEN_DEFAULT_LIFETIME_SECONDS = 300;

/** `POST /retrieve-date` and `/check` take the number (two-legged token: the number is in the body). */
export interface CamaraRequestBody {
  phoneNumber: string;
  maxAge?: number;
}

/** RFC 3339 with a time zone, as the API requires. */
const dateTime = z.string().refine((text) => /(?:Z|[+-]\d{2}:\d{2})$/i.test(text) && !Number.isNaN(Date.parse(text)), 'an RFC 3339 date-time with a time zone');

/**
 * `retrieve-date`'s SimSwapInfo: the latest SIM change (or the activation date when the SIM never
 * changed and the operator monitors without limit), or null when it cannot be told; then
 * `monitoredPeriod` (days), when given, says no change happened within that period.
 */
export const simSwapInfo = z.object({
  latestSimChange: dateTime.nullable(),
  monitoredPeriod: z.number().int().min(0).optional(),
});
export type SimSwapInfo = z.infer<typeof simSwapInfo>;

/** `check`'s CheckSimSwapInfo: whether the SIM changed within `maxAge` hours. */
export const checkSimSwapInfo = z.object({ swapped: z.boolean() });

/** CAMARA's ErrorInfo: `{ status, code, message }`. */
export const camaraError = z.object({ status: z.number().int().optional(), code: z.string().optional(), message: z.string().optional() });

/** The token endpoint's answer (RFC 6749 section 5.1). */
export const tokenAnswer = z.object({
  access_token: z.string().min(1),
  token_type: z.string().refine((type) => type.toLowerCase() === 'bearer', 'a bearer token'),
  expires_in: z.number().positive().optional(),
});
export type TokenAnswer = z.infer<typeof tokenAnswer>;

/**
 * The error codes of the API that say something about the number rather than about the upstream:
 * - `IDENTIFIER_NOT_FOUND` (404) and `SERVICE_NOT_APPLICABLE` (422): this operator does not serve the
 *   number, or the service does not apply to it: `no_coverage`, the router asks the next provider;
 * - `MISSING_IDENTIFIER` / `UNNECESSARY_IDENTIFIER` (422): our request and the token disagree on who the
 *   subject is (a three-legged token configured by mistake): the lookup failed, logged.
 * Any other 4xx is read by its HTTP status.
 */
export const CAMARA_NUMBER_ERRORS = {
  IDENTIFIER_NOT_FOUND: 'no_coverage',
  SERVICE_NOT_APPLICABLE: 'no_coverage',
  MISSING_IDENTIFIER: 'query_failed',
  UNNECESSARY_IDENTIFIER: 'query_failed',
} as const satisfies Record<string, UpstreamFailureKind>;
export type CamaraNumberError = keyof typeof CAMARA_NUMBER_ERRORS;

export function camaraNumberError(code: string | undefined): UpstreamFailureKind | undefined {
  return code !== undefined && Object.hasOwn(CAMARA_NUMBER_ERRORS, code) ? CAMARA_NUMBER_ERRORS[code as CamaraNumberError] : undefined;
}

/** HTTP Basic with the client id and secret (RFC 6749 section 2.3.1: each form-encoded first). */
export function clientAuthorization(client: { key: string; secret: string }): string {
  const encode = (text: string) => encodeURIComponent(text).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(client.key)}:${encode(client.secret)}`).toString('base64')}`;
}

/** The token request's body: the client-credentials grant and our scopes. */
export function tokenRequestBody(): string {
  return new URLSearchParams({ grant_type: 'client_credentials', scope: CAMARA_SCOPES }).toString();
}
