import type { FieldValue } from '../../checks/check-definition';
import { UpstreamFailure } from '../port/upstream-failure';
import { NetworkStatusAnswer, NumberTypeAnswer, PortabilityAnswer } from '../port/lookup.types';
import { brandName, HLR_CONNECTIVITY_STATUSES, isKnownNumberType, lineTypeFromUpstream } from './hlr-lookups.protocol';
import { HlrLookupAnswer, MnpLookupAnswer, NtLookupAnswer } from './hlr-lookups.schema';

/**
 * The contract's answers from parsed upstream answers (docs/upstream-hlr-lookups.md, "How we map it").
 * A lookup the upstream did not complete is a failure, never a guess: the caller refunds it.
 */
function networkStatusFrom(answer: HlrLookupAnswer): NetworkStatusAnswer {
  if (answer.processing_status !== 'COMPLETED') {
    const kind = answer.processing_status === 'REJECTED' ? 'processing_rejected' : 'processing_failed';
    throw new UpstreamFailure(`upstream HLR lookup ${answer.processing_status} (error_code ${answer.error_code ?? 'none'})`, 'upstream_error', kind);
  }
  const status = HLR_CONNECTIVITY_STATUSES[answer.connectivity_status];
  // A number assigned to no subscriber has no operator serving it.
  return { status, carrier: answer.connectivity_status === 'INVALID_MSISDN' ? null : currentNetwork(answer) };
}

/** The network check's full record: the contract's answer, the upstream's own status word and the network codes. */
export function networkStatusRecord(answer: HlrLookupAnswer): Record<string, FieldValue> {
  const { status, carrier } = networkStatusFrom(answer);
  return { status, carrier, status_reason: answer.connectivity_status, ...networkCodes(answer) };
}

/**
 * `is_valid` is the upstream's own verdict: we ask only about numbers our numbering plan calls valid, so
 * `is_valid: false` is answered from the type it still gives, and when it gives none (UNKNOWN) the
 * lookup is refunded as `no_coverage` (the router asks the next provider): never a charged UNKNOWN
 * that nobody looked up.
 */
function numberTypeFrom(answer: NtLookupAnswer): NumberTypeAnswer {
  if (answer.query_status !== 'OK') throw queryFailed('NT', answer.error_code);
  const lineType = lineTypeFromUpstream(answer.number_type);
  if (answer.is_valid === false && lineType === 'UNKNOWN') {
    throw new UpstreamFailure('upstream NT calls this number invalid and gives no type', 'upstream_error', 'no_coverage');
  }
  return { lineType };
}

/** The number type check's full record. */
export function numberTypeRecord(answer: NtLookupAnswer): Record<string, FieldValue> {
  return { line_type: numberTypeFrom(answer).lineType };
}

/**
 * The number_type of an OK answer for a valid number that is not in our vocabulary (the upstream may
 * add words): it is answered UNKNOWN, and the adapter counts and logs it. Null when there is none.
 */
export function unknownNumberType(answer: NtLookupAnswer): string | null {
  if (answer.query_status !== 'OK' || answer.is_valid !== true) return null;
  return isKnownNumberType(answer.number_type) ? null : (answer.number_type ?? '');
}

function portabilityFrom(answer: MnpLookupAnswer): PortabilityAnswer {
  if (answer.query_status !== 'OK') throw queryFailed('MNP', answer.error_code);
  return { isPorted: answer.is_ported === true, carrier: currentNetwork(answer) };
}

/** The portability check's full record: the contract's answer and the network codes. */
export function portabilityRecord(answer: MnpLookupAnswer): Record<string, FieldValue> {
  const { isPorted, carrier } = portabilityFrom(answer);
  return { is_ported: isPorted, carrier, ...networkCodes(answer) };
}

/** MCC and MNC of the network serving the number, where the upstream gives them (null otherwise). */
function networkCodes(answer: { mcc?: string | null; mnc?: string | null }): { mcc: string | null; mnc: string | null } {
  return { mcc: answer.mcc ?? null, mnc: answer.mnc ?? null };
}

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
