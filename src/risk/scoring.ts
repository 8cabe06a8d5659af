import type { ConnectionStatus, LineType } from '../checks/phone-answer.dto';
import type { RiskThresholds } from '../settings/risk-settings';
import type { DestinationRisk } from './destination-table';
import type { NumberRanges } from './number-ranges';
import type { ReasonCode, RiskReason } from './reasons';

export const RISK_EVENTS = ['signup', 'login', 'otp', 'other'] as const;
export type RiskEvent = (typeof RISK_EVENTS)[number];

export const RISK_LEVELS = ['low', 'medium', 'high'] as const;
export type RiskLevel = (typeof RISK_LEVELS)[number];
export const RECOMMENDATIONS = ['allow', 'flag', 'block'] as const;
export type Recommendation = (typeof RECOMMENDATIONS)[number];

/** Known outcomes of the verdicts of one scope (sent feedback, or none past the grace) and how many verified. */
export interface VerificationCount {
  outcomes: number;
  verified: number;
}

/** What the counters saw, this call included (RiskCounters.observe). */
export interface ObservedCounts {
  /** Distinct numbers of the number's 10,000-number range, account and source, in the last hour and day. */
  rangeHour: number;
  rangeDay: number;
  /** Distinct numbers of its 100-number block, account and source, in the last hour. */
  blockHour: number;
  /** Distinct numbers of its 10,000-number range, every account of the deployment, in the last hour. */
  deploymentRangeHour: number;
  /** Distinct numbers of its block of ten and the two beside it, account and source, in the last hour. */
  nearbyHour: number;
  /** With an `ip`: distinct numbers and countries asked with it in the last hour; null without. */
  ipNumbersHour: number | null;
  ipCountriesHour: number | null;
  /** Distinct countries and numbers of the source in the last hour. */
  sourceCountriesHour: number;
  sourceNumbersHour: number;
  verification: {
    range: VerificationCount;
    country: VerificationCount;
    source: VerificationCount;
    /** The source's asks of the last hour only. */
    sourceHour: VerificationCount;
    ip: VerificationCount | null;
    deploymentRange: VerificationCount;
  };
  /** The grace after which a verdict without feedback counted as not verified, in seconds. */
  graceSeconds: number;
}

/** Everything a verdict is decided on. */
export interface RiskSignals {
  event: RiskEvent;
  country: string | null;
  validForPlan: boolean;
  /** The numbering plan's type (libphonenumber). */
  planType: LineType;
  /** The line type a provider answered for the number, when the cache holds one (null: not known). */
  knownLineType: LineType | null;
  destination: DestinationRisk;
  /** The network status a provider answered, when the cache holds one. */
  liveness: ConnectionStatus | null;
  /** A provider's SIM-swap answer, when the cache holds one: hours since the last change (null: none known), and its own verdict. */
  simSwap: { hoursSince: number | null; swapped: boolean | null } | null;
  ranges: NumberRanges;
  counts: ObservedCounts;
}

export interface RiskVerdict {
  score: number;
  level: RiskLevel;
  recommendation: Recommendation;
  reasons: RiskReason[];
}

/** A reason with its weight: how much risk (0-100) it alone stands for. */
interface WeightedReason extends RiskReason {
  weight: number;
}

type Rule = (signals: RiskSignals, thresholds: RiskThresholds) => WeightedReason | undefined;

/**
 * Numbering-plan types that are never a person's phone for a one-time code, with their weight. A
 * premium-rate or shared-cost number blocks on its own; the others flag (a landline only adds).
 */
const SPECIAL_TYPES: Partial<Record<LineType, { code: ReasonCode; weight: number; why: string }>> = {
  PREMIUM_RATE: { code: 'PREMIUM_RATE', weight: 95, why: 'is a premium-rate number: a text or call to it pays its owner, the way SMS pumping makes money' },
  SHARED_COST: { code: 'SHARED_COST', weight: 70, why: 'is a shared-cost number, which cannot take a text and costs more to reach' },
  TOLL_FREE: { code: 'TOLL_FREE', weight: 60, why: 'is a toll-free number, which cannot take a text' },
  PAGER: { code: 'PAGER', weight: 60, why: 'is a pager number, which cannot take a one-time code' },
  VOICEMAIL: { code: 'VOICEMAIL', weight: 60, why: 'is a voicemail access number: nobody would read a code sent there' },
  PERSONAL_NUMBER: { code: 'PERSONAL_NUMBER', weight: 45, why: 'is a personal (follow-me) number: a forwarding service, not a phone' },
  UAN: { code: 'UAN', weight: 45, why: 'is a universal access number: a company switchboard, not a person' },
  VOIP: { code: 'VOIP', weight: 35, why: 'is a VoIP number: virtual, cheap to get in bulk and often disposable' },
  FIXED_LINE: { code: 'FIXED_LINE', weight: 20, why: 'is a landline, which cannot take a text message' },
};

/** How a weight grows past a threshold: `base` at it, `step` more per count beyond, at most `max`. */
function past(count: number, threshold: number, base: number, step: number, max: number): number {
  return Math.min(max, base + step * (count - threshold));
}

const rules: Rule[] = [
  // The type a provider answered (from the cache) is more precise than the plan's: when known, it decides.
  (s) => {
    const known = s.knownLineType !== null && s.knownLineType !== 'UNKNOWN';
    const type = SPECIAL_TYPES[known ? s.knownLineType! : s.planType];
    if (!type) return undefined;
    return { code: type.code, weight: type.weight, message: `This number ${type.why} (${known ? 'as a provider answered its line type' : 'by its numbering plan'}).` };
  },
  (s) =>
    s.validForPlan
      ? undefined
      : { code: 'INVALID_NUMBER', weight: 60, message: 'This number is not valid for its numbering plan: its range is not allocated to any operator, or it has the wrong length.' },
  (s) => {
    const { risk, key, adjusted } = s.destination;
    if (risk < 40 || key === null) return undefined;
    const where = key.startsWith('+') ? `numbers starting ${key}` : `numbers of ${key}`;
    return {
      code: 'HIGH_RISK_DESTINATION',
      weight: Math.round(risk * 0.35),
      message: `${adjusted ? "Your account's adjustment of the destination table" : 'The destination table'} rates ${where} at risk ${risk} of 100: a destination where texts cost more or pumping is common.`,
    };
  },
  (s, t) => {
    const c = s.counts;
    const found = [
      c.rangeHour >= t.range_velocity_hour && { weight: past(c.rangeHour, t.range_velocity_hour, 45, 15, 90), text: `${c.rangeHour} distinct numbers of the range ${s.ranges.range}… from this source within an hour (threshold ${t.range_velocity_hour})` },
      c.rangeDay >= t.range_velocity_day && { weight: past(c.rangeDay, t.range_velocity_day, 45, 8, 85), text: `${c.rangeDay} distinct numbers of the range ${s.ranges.range}… from this source within 24 hours (threshold ${t.range_velocity_day})` },
      c.blockHour >= t.block_velocity_hour && { weight: past(c.blockHour, t.block_velocity_hour, 50, 15, 90), text: `${c.blockHour} distinct numbers of the 100-number block ${s.ranges.block}… within an hour (threshold ${t.block_velocity_hour})` },
      c.deploymentRangeHour >= t.deployment_range_velocity_hour && {
        weight: past(c.deploymentRangeHour, t.deployment_range_velocity_hour, 45, 5, 85),
        text: `${c.deploymentRangeHour} distinct numbers of the range ${s.ranges.range}… asked by all accounts of this service within an hour (threshold ${t.deployment_range_velocity_hour})`,
      },
    ].filter((hit): hit is { weight: number; text: string } => Boolean(hit));
    if (found.length === 0) return undefined;
    found.sort((a, b) => b.weight - a.weight);
    return { code: 'RANGE_VELOCITY', weight: found[0].weight, message: `Asked for ${found.map((hit) => hit.text).join('; ')}: pumping walks through number ranges.` };
  },
  (s, t) => {
    const n = s.counts.nearbyHour;
    if (n < t.sequential_numbers) return undefined;
    return {
      code: 'SEQUENTIAL_NUMBERS',
      weight: past(n, t.sequential_numbers, 55, 15, 95),
      message: `${n} distinct numbers within 30 consecutive numbers of this one (around ${s.ranges.ten}…) were asked within an hour (threshold ${t.sequential_numbers}): a script counting through a range.`,
    };
  },
  (s, t) => {
    const n = s.counts.ipNumbersHour;
    if (n === null || n < t.ip_numbers_hour) return undefined;
    return { code: 'IP_VELOCITY', weight: past(n, t.ip_numbers_hour, 40, 10, 85), message: `${n} distinct numbers were asked from this IP address within an hour (threshold ${t.ip_numbers_hour}).` };
  },
  (s, t) => {
    const c = s.counts;
    const byIp = c.ipCountriesHour !== null && c.ipCountriesHour >= t.ip_countries_hour;
    // A source's spread over countries is evidence only while its codes are not seen verified: a busy
    // legitimate source (an app used worldwide) asks one number a country too, and its users verify.
    // Its last hour decides: unknown (too few outcomes yet) flags at most; a poor rate counts in full.
    const hour = c.verification.sourceHour;
    const hourKnown = hour.outcomes >= t.verification_min_outcomes;
    const hourHealthy = hourKnown && (100 * hour.verified) / hour.outcomes >= Math.min(100, 2 * t.verification_rate);
    const bySource = !hourHealthy && c.sourceCountriesHour >= t.source_countries_hour && c.sourceCountriesHour * 2 >= c.sourceNumbersHour;
    if (!byIp && !bySource) return undefined;
    const parts = [
      byIp && `numbers of ${c.ipCountriesHour} countries were asked from this IP address within an hour (threshold ${t.ip_countries_hour})`,
      bySource &&
        `this source asked for numbers of ${c.sourceCountriesHour} countries within an hour, nearly one number a country (threshold ${t.source_countries_hour}), ` +
          (hourKnown ? `and only ${hour.verified} of its ${hour.outcomes} codes of that hour with a known outcome were verified` : 'before any of its codes of that hour could be verified'),
    ].filter(Boolean);
    const sourceWeight = bySource ? Math.min(hourKnown ? 80 : t.block_score - 5, past(c.sourceCountriesHour, t.source_countries_hour, 45, 5, 80)) : 0;
    const weight = Math.max(byIp ? past(c.ipCountriesHour!, t.ip_countries_hour, 50, 15, 90) : 0, sourceWeight);
    return { code: 'MANY_COUNTRIES', weight, message: `${capitalised(parts.join('; and '))}: one sender does not sign up people everywhere at once.` };
  },
  (s, t) => {
    const { verification, graceSeconds } = s.counts;
    // Narrow scopes (a range, a source, an IP) speak of this number's sender and may block; broad ones
    // (a whole country, a range across accounts) say a destination is under attack, which also holds
    // the real users there: they flag at most.
    const scopes: Array<[string, VerificationCount | null, boolean]> = [
      [`the range ${s.ranges.range}…`, verification.range, true],
      [s.country ? `numbers of ${s.country}` : 'numbers without a country', verification.country, false],
      ['this source', verification.source, true],
      ['this source within the last hour', verification.sourceHour, true],
      ['this IP address', verification.ip, true],
      [`the range ${s.ranges.range}… across accounts`, verification.deploymentRange, false],
    ];
    const low = scopes
      .filter((entry): entry is [string, VerificationCount, boolean] => entry[1] !== null && entry[1].outcomes >= t.verification_min_outcomes)
      .map(([scope, count, narrow]) => {
        const rate = (100 * count.verified) / count.outcomes;
        const weight = Math.round(40 + 30 * (1 - rate / Math.max(1, t.verification_rate)));
        return { scope, count, rate, weight: narrow ? weight : Math.min(weight, t.block_score - 25) };
      })
      .filter(({ rate }) => rate < t.verification_rate);
    if (low.length === 0) return undefined;
    low.sort((a, b) => b.weight - a.weight || a.rate - b.rate);
    const worst = low[0];
    return {
      code: 'LOW_VERIFICATION_RATE',
      weight: worst.weight,
      message:
        `Only ${worst.count.verified} of the last ${worst.count.outcomes} codes sent to ${worst.scope} were verified (${Math.round(worst.rate)}%, threshold ${t.verification_rate}%; ` +
        `a code not verified within ${graceSeconds} s counts as not verified): real people enter their codes, pumping never does.`,
    };
  },
  (s) =>
    s.liveness === 'ABSENT'
      ? { code: 'NOT_LIVE', weight: 45, message: 'A provider last answered that this number is not connected to a network: a code sent there is not received.' }
      : undefined,
  (s, t) => {
    if (!s.simSwap) return undefined;
    const { hoursSince, swapped } = s.simSwap;
    const recent = hoursSince !== null ? hoursSince <= t.swap_window_hours : swapped === true;
    if (!recent) return undefined;
    const weight = s.event === 'login' || s.event === 'otp' ? 80 : s.event === 'other' ? 50 : 25;
    const when = hoursSince !== null ? `${Math.max(0, Math.round(hoursSince))} hours ago (threshold ${t.swap_window_hours})` : 'recently, as a provider answered';
    return {
      code: 'RECENT_SIM_SWAP',
      weight,
      message: `The SIM behind this number changed ${when}: whoever holds the phone now may not be its owner${s.event === 'login' || s.event === 'otp' ? ', so do not trust it for login or recovery yet' : ''}.`,
    };
  },
];

function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The level and recommendation of a score, by the account's thresholds. */
export function levelOf(score: number, thresholds: Pick<RiskThresholds, 'flag_score' | 'block_score'>): { level: RiskLevel; recommendation: Recommendation } {
  if (score >= thresholds.block_score) return { level: 'high', recommendation: 'block' };
  if (score >= thresholds.flag_score) return { level: 'medium', recommendation: 'flag' };
  return { level: 'low', recommendation: 'allow' };
}

/**
 * The verdict: every rule that applies gives a reason and a weight; the weights combine like
 * independent probabilities (score = 100 × (1 − Π(1 − weight/100))), so two moderate signals make a
 * stronger one and no sum passes 100. Reasons strongest first.
 */
export function scoreOf(signals: RiskSignals, thresholds: RiskThresholds): RiskVerdict {
  const reasons = rules.map((rule) => rule(signals, thresholds)).filter((reason): reason is WeightedReason => reason !== undefined);
  reasons.sort((a, b) => b.weight - a.weight);
  const clear = reasons.reduce((product, reason) => product * (1 - Math.min(100, Math.max(0, reason.weight)) / 100), 1);
  const score = Math.round(100 * (1 - clear));
  return { score, ...levelOf(score, thresholds), reasons: reasons.map(({ code, message }) => ({ code, message })) };
}
