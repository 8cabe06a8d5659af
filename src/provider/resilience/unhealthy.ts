import { ProviderUnavailableError, UpstreamFailure } from '../port/upstream-failure';

/**
 * What counts against an upstream's health (its breaker): it could not be reached or did not answer
 * in time, answered 5xx, sent a body that is not JSON or too big. Not: 4xx (credentials, its rate
 * limit, a request it refused) nor the failure of one number's lookup (`number_failed`, a failed
 * query): those say nothing about the upstream for other numbers.
 */
export function isUpstreamUnhealthy(error: unknown): boolean {
  if (error instanceof UpstreamFailure) {
    return ['network', 'timeout', 'invalid_answer', 'oversized'].includes(error.kind) || /^http_5\d\d$/.test(error.kind);
  }
  if (error instanceof ProviderUnavailableError) return error.reason === 'timeout' || error.reason === 'network';
  return true; // cockatiel's own timeout (TaskCancelledError) and anything unexpected
}
