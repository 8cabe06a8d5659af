import { HttpStatus } from '@nestjs/common';

export const ERROR_CODES = [
  'INVALID_REQUEST',
  'INVALID_API_KEY',
  'REVOKED_API_KEY',
  'INSUFFICIENT_CREDITS',
  'SPENDING_LIMIT_REACHED',
  'NOT_FOUND',
  'IDEMPOTENCY_CONFLICT',
  'NOT_READY',
  'PAYLOAD_TOO_LARGE',
  'RATE_LIMITED',
  'INTERNAL_ERROR',
  'PROVIDER_UNAVAILABLE',
  'SERVICE_UNAVAILABLE',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** The contract's one table of error codes to HTTP statuses (docs/api.md). */
export const ERROR_STATUS = {
  INVALID_REQUEST: HttpStatus.BAD_REQUEST,
  INVALID_API_KEY: HttpStatus.UNAUTHORIZED,
  REVOKED_API_KEY: HttpStatus.UNAUTHORIZED,
  INSUFFICIENT_CREDITS: HttpStatus.PAYMENT_REQUIRED,
  SPENDING_LIMIT_REACHED: HttpStatus.PAYMENT_REQUIRED,
  NOT_FOUND: HttpStatus.NOT_FOUND,
  IDEMPOTENCY_CONFLICT: HttpStatus.CONFLICT,
  NOT_READY: HttpStatus.CONFLICT,
  PAYLOAD_TOO_LARGE: HttpStatus.PAYLOAD_TOO_LARGE,
  RATE_LIMITED: HttpStatus.TOO_MANY_REQUESTS,
  INTERNAL_ERROR: HttpStatus.INTERNAL_SERVER_ERROR,
  PROVIDER_UNAVAILABLE: HttpStatus.SERVICE_UNAVAILABLE,
  SERVICE_UNAVAILABLE: HttpStatus.SERVICE_UNAVAILABLE,
} as const satisfies Record<ErrorCode, HttpStatus>;

const DEFAULT_MESSAGES = {
  INVALID_REQUEST: 'The request is not valid.',
  INVALID_API_KEY: 'Missing or unknown API key. Send the header "Authorization: Bearer <API_KEY>".',
  REVOKED_API_KEY: 'This API key has been revoked or its account is disabled.',
  INSUFFICIENT_CREDITS: 'Your credits have run out for this request. Top up your balance to continue.',
  SPENDING_LIMIT_REACHED: "This request would pass the account's daily spending limit (daily_credit_limit). Nothing was charged; it resets at 00:00 UTC.",
  NOT_FOUND: 'The requested resource does not exist.',
  IDEMPOTENCY_CONFLICT: 'This Idempotency-Key was already used with a different request, or that request is still running.',
  NOT_READY: 'This exists but is not ready yet. Retry after the number of seconds in the Retry-After header.',
  PAYLOAD_TOO_LARGE: 'The request body is larger than the 1 MiB limit.',
  RATE_LIMITED: 'Rate limit exceeded. Retry after the number of seconds in the Retry-After header.',
  INTERNAL_ERROR: 'An internal error occurred. It has been logged; please retry later.',
  PROVIDER_UNAVAILABLE: 'The lookup network is unavailable right now. The credits for this call were refunded; please retry.',
  SERVICE_UNAVAILABLE: 'The service is temporarily unavailable. Nothing was charged; please retry.',
} as const satisfies Record<ErrorCode, string>;

/** The one error type services throw. The global filter turns it into the contract's body. */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message ?? DEFAULT_MESSAGES[code]);
    this.name = 'AppError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string };
}

export function errorBody(code: ErrorCode, message?: string): ErrorBody {
  return { error: { code, message: message ?? DEFAULT_MESSAGES[code] } };
}
