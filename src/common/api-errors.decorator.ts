import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorCode, ERROR_CODES, ERROR_STATUS, errorBody } from './errors';

export const ERROR_SCHEMA_REF = '#/components/schemas/Error';

/** When each code is answered (docs/api.md), for the response descriptions of the document. */
const ERROR_WHEN = {
  INVALID_REQUEST: 'malformed JSON, a body in another charset than UTF-8, a JSON key twice in one object, wrong content type, a missing or invalid field, an unknown field or query parameter',
  INVALID_API_KEY: 'no `Authorization` header, not `Bearer <key>`, or an unknown key',
  REVOKED_API_KEY: 'the key was revoked or its account is disabled',
  INSUFFICIENT_CREDITS: 'the balance is below the cost of the call; nothing is charged',
  SPENDING_LIMIT_REACHED: "the call would take today's (UTC) charges past the account's `daily_credit_limit`; nothing is charged; the message says the limit, what is left and when it resets",
  NOT_FOUND: 'unknown route or resource',
  IDEMPOTENCY_CONFLICT: 'the `Idempotency-Key` was used with another body, or its first call is still running',
  NOT_READY: 'the resource exists but is not ready yet (a bulk job\'s results while it runs); retry after `Retry-After` seconds',
  PAYLOAD_TOO_LARGE: 'the body is over 1 MiB',
  RATE_LIMITED: 'the plan limit (or, without a valid key, the per-address limit) was reached; wait `Retry-After` seconds',
  INTERNAL_ERROR: 'a bug; the message is generic and the error is logged with the request id',
  PROVIDER_UNAVAILABLE: 'the lookup network is unreachable, timed out or failing; the credits of the call are refunded',
  SERVICE_UNAVAILABLE: "the service's own database (or a dependency) is unreachable, or the instance is overloaded (a paid call waited past its queue deadline; retry after `Retry-After` seconds); nothing is charged",
} as const satisfies Record<ErrorCode, string>;

/** One response of the document for the codes that share an HTTP status: the Error schema, one example per code. */
export function errorResponseContent(codes: readonly ErrorCode[]) {
  const ordered = ERROR_CODES.filter((code) => codes.includes(code));
  return {
    description: ordered.map((code) => `**${code}**: ${ERROR_WHEN[code]}.`).join(' '),
    schema: { $ref: ERROR_SCHEMA_REF },
    examples: Object.fromEntries(ordered.map((code) => [code, { summary: code, value: errorBody(code) }])),
  };
}

/** The codes an Error response of the document already names (the keys of its examples). */
export function documentedErrorCodes(examples: Record<string, unknown> | undefined): ErrorCode[] {
  return ERROR_CODES.filter((code) => examples !== undefined && code in examples);
}

export function groupByStatus(codes: readonly ErrorCode[]): Map<number, ErrorCode[]> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  return byStatus;
}

/**
 * Documents the contract's error responses of a route, all with the one Error schema. Codes that every
 * route of a kind can answer (INTERNAL_ERROR everywhere; 401, 429 and 503 on /api/v1) are added to the
 * document by buildOpenApiDocument, merged with these, so a route lists only its own.
 */
export function ApiErrors(...codes: ErrorCode[]): MethodDecorator & ClassDecorator {
  return applyDecorators(...[...groupByStatus(codes)].map(([status, sameStatus]) => ApiResponse({ status, ...errorResponseContent(sameStatus) })));
}

/** What every authenticated /api/v1 route can answer besides its own errors. */
export const CUSTOMER_API_ERRORS: ErrorCode[] = ['INVALID_API_KEY', 'REVOKED_API_KEY', 'RATE_LIMITED', 'INTERNAL_ERROR', 'SERVICE_UNAVAILABLE'];
