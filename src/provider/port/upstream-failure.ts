/** Any failure to get an answer from the upstream. Turned into 503 PROVIDER_UNAVAILABLE (and a refund). */
export class ProviderUnavailableError extends Error {
  constructor(
    message: string,
    readonly reason: 'timeout' | 'network' | 'upstream_error' | 'circuit_open' | 'unauthorized',
  ) {
    super(message);
    this.name = 'ProviderUnavailableError';
  }
}

/**
 * What an upstream failure was, for the metrics (a bounded vocabulary): the HTTP status of a refused
 * request, a lookup the upstream could not complete, an answer that does not match the schema, or
 * one the resilience wrapper refused (too big).
 */
export type UpstreamFailureKind =
  | `http_${number}`
  | 'rate_limited'
  | 'rate_limit_wait'
  | 'invalid_answer'
  /** An answer bigger than PROVIDER_MAX_RESPONSE_BYTES: the stream is cut there. */
  | 'oversized'
  /** The upstream said this one number's lookup failed (e.g. a 5xx naming the number): not its health. */
  | 'number_failed'
  /** The upstream has no data for this number (e.g. a data package answered null). */
  | 'no_coverage'
  /** No provider may be asked for this number (LOOKUP_ROUTING residency). */
  | 'no_provider_allowed'
  /** The upstream does not offer this check at all. */
  | 'not_offered'
  /** The call's LOOKUP_CALL_BUDGET_MS was spent before this upstream was asked: no request, nothing about its health. */
  | 'budget_spent'
  | 'processing_rejected'
  | 'processing_failed'
  | 'query_failed'
  /** A completed answer that carries an error_code (counted; the answer stands). */
  | 'error_code'
  /** An OK NT answer for a valid number whose number_type is not a word we know (answered UNKNOWN). */
  | 'unknown_number_type'
  | ProviderUnavailableError['reason'];

/** A ProviderUnavailableError that says which upstream failure it was (a refunded 503 for the caller). */
export class UpstreamFailure extends ProviderUnavailableError {
  constructor(
    message: string,
    reason: ProviderUnavailableError['reason'],
    readonly kind: UpstreamFailureKind,
  ) {
    super(message, reason);
  }
}

/** Socket-level failure where the request most likely never reached the upstream: worth a retry. */
export class UpstreamConnectionError extends UpstreamFailure {
  constructor(message: string) {
    super(message, 'network', 'network');
  }
}
