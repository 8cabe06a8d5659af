import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { NetworkSituation, portedCarrier, simSwapHoursAgo, TestNumberRule } from '../../src/provider/adapters/test-numbers';
import { LineStatusWord, twilioLineType, TwilioLookupErrorCode } from '../../src/provider/adapters/twilio-lookup.protocol';
import { describeNumber, originalCarrier } from '../../src/provider/numbering/numbering-plan';
import { mccmnc } from '../upstream-simulator/answers';

/**
 * The Twilio simulator's answers (docs/upstream-twilio-lookup.md): the phone-number resource with every
 * field Twilio documents for it and the two packages we ask for, built from the shared test-number
 * table and libphonenumber's data.
 */

/**
 * How Line Status says each test-number situation (test-numbers.ts): the word whose meaning, by
 * LINE_STATUSES, is the situation's status (a unit test holds the two together). All five words.
 */
export const LINE_STATUS_FOR: Readonly<Record<NetworkSituation, LineStatusWord>> = {
  reachable: 'reachable',
  switched_off: 'unreachable',
  not_assigned: 'inactive',
  subscribed: 'active',
  unknown: 'unknown',
};

/** The error code the failing test number (0003) answers in its package: Twilio's own provider replied with an error. */
export const FAILING_NUMBER_ERROR_CODE: TwilioLookupErrorCode = 60608;

/** What one answer needs besides the number: the package asked for and how to play it. */
export interface TwilioAnswerPlan {
  fields: 'line_status' | 'line_type_intelligence' | 'sim_swap' | null;
  rule: TestNumberRule | null;
  /** An error_code in the package instead of its data. */
  errorCode: number | null;
  /** The package answered null (no data for this number). */
  noData: boolean;
  /** Twilio's own validity verdict, whatever the numbering plan says (null: the plan's). */
  valid: boolean | null;
  /** A word outside the documented vocabulary. */
  unknownWord: boolean;
  /** SIM Swap without the date (as in countries whose rules keep it back): only whether it changed within SIM_SWAP_PERIOD. */
  simSwapDateWithheld?: boolean;
  /** Now, for the SIM change dates (the simulator's clock). */
  now?: Date;
}

/** The period Twilio's SIM Swap answers `swapped_in_period` over, as the simulator plays it. */
export const SIM_SWAP_PERIOD = { iso: 'PT24H', hours: 24 } as const;

export async function phoneNumberResource(e164: string, plan: TwilioAnswerPlan): Promise<Record<string, unknown>> {
  const facts = describeNumber(e164);
  const phone = parsePhoneNumberFromString(e164);
  const valid = plan.valid ?? facts.validForPlan;
  const answer: Record<string, unknown> = {
    calling_country_code: phone?.countryCallingCode ?? null,
    country_code: facts.region,
    phone_number: e164,
    national_format: phone?.formatNational() ?? null,
    valid,
    validation_errors: valid ? [] : ['INVALID_BUT_POSSIBLE'],
    line_status: null,
    line_type_intelligence: null,
    sim_swap: null,
    url: `https://lookups.twilio.com/v2/PhoneNumbers/${e164}`,
  };
  if (plan.noData || plan.fields === null || (!facts.validForPlan && plan.valid === null)) return answer;
  const failed = plan.rule?.kind === 'failure';
  const errorCode = plan.errorCode ?? (failed ? FAILING_NUMBER_ERROR_CODE : null);
  if (plan.fields === 'sim_swap') {
    if (errorCode !== null) {
      answer.sim_swap = { last_sim_swap: null, carrier_name: null, mobile_country_code: null, mobile_network_code: null, error_code: errorCode };
      return answer;
    }
    const hoursAgo = simSwapHoursAgo(e164);
    const changedAt = new Date((plan.now ?? new Date()).getTime() - hoursAgo * 3_600_000);
    const carrier = await originalCarrier(e164);
    const codes = mccmnc(facts.region, carrier);
    answer.sim_swap = {
      last_sim_swap: {
        last_sim_swap_date: plan.simSwapDateWithheld ? null : plan.unknownWord ? 'last tuesday' : changedAt.toISOString(),
        swapped_period: SIM_SWAP_PERIOD.iso,
        swapped_in_period: hoursAgo <= SIM_SWAP_PERIOD.hours,
      },
      carrier_name: carrier,
      mobile_country_code: codes.mcc,
      mobile_network_code: codes.mnc,
      error_code: null,
    };
    return answer;
  }
  if (plan.fields === 'line_status') {
    const status = plan.unknownWord ? 'dormant' : plan.rule && plan.rule.kind !== 'failure' ? LINE_STATUS_FOR[plan.rule.situation] : 'unknown';
    answer.line_status = errorCode !== null ? { status: null, error_code: errorCode } : { status, error_code: null };
    return answer;
  }
  if (errorCode !== null) {
    answer.line_type_intelligence = { type: null, carrier_name: null, mobile_country_code: null, mobile_network_code: null, error_code: errorCode };
    return answer;
  }
  const isPorted = plan.rule !== null && plan.rule.kind !== 'failure' && plan.rule.isPorted;
  const original = await originalCarrier(e164);
  const carrier = isPorted ? portedCarrier(facts.region, original) : original;
  const mobile = facts.lineType === 'MOBILE' || facts.lineType === 'FIXED_LINE_OR_MOBILE';
  const codes = mobile ? mccmnc(facts.region, carrier) : { mcc: null, mnc: null };
  answer.line_type_intelligence = {
    type: plan.unknownWord ? 'satellitePhone' : twilioLineType(facts.lineType),
    carrier_name: carrier,
    mobile_country_code: codes.mcc,
    mobile_network_code: codes.mnc,
    error_code: null,
  };
  return answer;
}
