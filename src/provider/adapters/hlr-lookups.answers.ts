import { ProviderUnavailableError } from '../lookup-provider';
import { ConnectionStatus, NetworkStatusAnswer, NumberTypeAnswer, PortabilityAnswer } from '../lookup.types';
import { brandName, isKnownNumberType, lineTypeFromUpstream } from './hlr-lookups.protocol';
import { HlrLookupAnswer, MnpLookupAnswer, NtLookupAnswer } from './hlr-lookups.schema';

/**
 * What an upstream failure was, for the metrics (a bounded vocabulary): the HTTP status of a refused
 * request, a lookup the upstream could not complete, or an answer that does not match the schema.
 */
export type UpstreamFailureKind =
  | `http_${number}`
  | 'rate_limited'
  | 'rate_limit_wait'
  | 'invalid_answer'
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

/**
 * The contract's answers from parsed upstream answers (docs/upstream-hlr-lookups.md, "How we map it").
 * A lookup the upstream did not complete is a failure, never a guess: the caller refunds it.
 */
export function networkStatusFrom(answer: HlrLookupAnswer): NetworkStatusAnswer {
  if (answer.processing_status !== 'COMPLETED') {
    const kind = answer.processing_status === 'REJECTED' ? 'processing_rejected' : 'processing_failed';
    throw new UpstreamFailure(`upstream HLR lookup ${answer.processing_status} (error_code ${answer.error_code ?? 'none'})`, 'upstream_error', kind);
  }
  if (answer.connectivity_status === 'INVALID_MSISDN') return { status: 'ABSENT', carrier: null };
  return { status: CONNECTION_STATUS[answer.connectivity_status], carrier: currentNetwork(answer) };
}

export function numberTypeFrom(answer: NtLookupAnswer): NumberTypeAnswer {
  if (answer.query_status !== 'OK') throw queryFailed('NT', answer.error_code);
  return { lineType: answer.is_valid === false ? 'UNKNOWN' : lineTypeFromUpstream(answer.number_type) };
}

/**
 * The number_type of an OK answer for a valid number that is not in our vocabulary (the upstream may
 * add words): it is answered UNKNOWN, and the adapter counts and logs it. Null when there is none.
 */
export function unknownNumberType(answer: NtLookupAnswer): string | null {
  if (answer.query_status !== 'OK' || answer.is_valid !== true) return null;
  return isKnownNumberType(answer.number_type) ? null : (answer.number_type ?? '');
}

export function portabilityFrom(answer: MnpLookupAnswer): PortabilityAnswer {
  if (answer.query_status !== 'OK') throw queryFailed('MNP', answer.error_code);
  return { isPorted: answer.is_ported === true, carrier: currentNetwork(answer) };
}

const CONNECTION_STATUS: Record<Exclude<HlrLookupAnswer['connectivity_status'], 'INVALID_MSISDN'>, ConnectionStatus> = {
  CONNECTED: 'CONNECTED',
  ABSENT: 'ABSENT',
  UNDETERMINED: 'UNDETERMINED',
};

function queryFailed(lookup: string, errorCode: number | null | undefined): UpstreamFailure {
  return new UpstreamFailure(`upstream ${lookup} lookup FAILED (error_code ${errorCode ?? 'none'})`, 'upstream_error', 'query_failed');
}

/**
 * The operator serving the number now: when ported, the ported-to network, or null when the upstream
 * does not name it (never the network the number left: that is not the number's operator any more);
 * else the original one.
 */
function currentNetwork(answer: { is_ported: boolean | null; ported_network_name: string | null; original_network_name?: string | null }): string | null {
  return answer.is_ported ? brandName(answer.ported_network_name) : brandName(answer.original_network_name);
}

/**
 * Running totals for /metrics (read at scrape time): what the upstream says it charged, and its
 * failures, by endpoint path. Plain numbers so that moving them to another metrics design is a copy.
 */
export class UpstreamTally {
  private readonly costs = new Map<string, number>();
  private readonly failures = new Map<string, { path: string; kind: UpstreamFailureKind; count: number }>();

  addCost(path: string, cost: string): void {
    const amount = Number(cost);
    if (Number.isFinite(amount) && amount > 0) this.costs.set(path, (this.costs.get(path) ?? 0) + amount);
  }

  addFailure(path: string, kind: UpstreamFailureKind): void {
    const key = `${path} ${kind}`;
    const entry = this.failures.get(key);
    if (entry) entry.count += 1;
    else this.failures.set(key, { path, kind, count: 1 });
  }

  costByPath(): ReadonlyMap<string, number> {
    return this.costs;
  }

  failureCounts(): Array<{ path: string; kind: UpstreamFailureKind; count: number }> {
    return [...this.failures.values()].map((entry) => ({ ...entry }));
  }
}
