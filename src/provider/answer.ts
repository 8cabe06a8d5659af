import type { EnabledChecks } from '../checks/checks';
import type { FilterResultDto } from './dto/filter-result.dto';
import type { LookupAnswers } from './lookup.types';
import type { NumberDescription } from './numbering-plan';

/**
 * The six fields of a result (docs/api.md). The shape never depends on the settings: a disabled check
 * leaves its fields at their neutral values. A number not valid for its plan is ABSENT, not looked up;
 * `valid` is false also when the network says ABSENT; the carrier is the network check's, else the
 * portability check's.
 */
export function composeResult(facts: NumberDescription, checks: EnabledChecks, answers: LookupAnswers): FilterResultDto {
  if (!facts.validForPlan) {
    return { country: facts.region, valid: false, status: 'ABSENT', carrier: null, line_type: 'UNKNOWN', is_ported: false };
  }
  const status = checks.network_status ? (answers.networkStatus?.status ?? 'UNDETERMINED') : 'UNDETERMINED';
  const carrier =
    (checks.network_status ? answers.networkStatus?.carrier : undefined) ??
    (checks.portability ? answers.portability?.carrier : undefined) ??
    null;
  return {
    country: facts.region,
    valid: status !== 'ABSENT',
    status,
    carrier,
    line_type: checks.line_type ? (answers.numberType?.lineType ?? 'UNKNOWN') : 'UNKNOWN',
    is_ported: checks.portability ? (answers.portability?.isPorted ?? false) : false,
  };
}
