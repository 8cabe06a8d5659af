import type { FilterResultDto } from './dto/filter.dto';
import type { EnabledChecks, LineType, LookupAnswers } from '../provider/lookup.types';

export interface NumberFacts {
  region: string | null;
  validForPlan: boolean;
  lineType: LineType;
}

/**
 * The six fields of a result, by the rules of API.md section 3. The shape never depends on the
 * settings: a disabled check leaves its fields at their neutral values.
 */
export function composeResult(facts: NumberFacts, checks: EnabledChecks, answers: LookupAnswers): FilterResultDto {
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
