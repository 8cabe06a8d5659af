import { DEFAULT_RISK_THRESHOLDS } from '../settings/risk-settings';
import { rangesOf } from './number-ranges';
import { levelOf, ObservedCounts, RiskSignals, scoreOf } from './scoring';

const none = { outcomes: 0, verified: 0 };

function counts(overrides: Partial<ObservedCounts> = {}): ObservedCounts {
  return {
    rangeHour: 1,
    rangeDay: 1,
    blockHour: 1,
    deploymentRangeHour: 1,
    nearbyHour: 1,
    ipNumbersHour: 1,
    ipCountriesHour: 1,
    sourceCountriesHour: 1,
    sourceNumbersHour: 1,
    verification: { range: none, country: none, source: none, sourceHour: none, ip: none, deploymentRange: none },
    graceSeconds: 600,
    ...overrides,
  };
}

/** A legitimate sign-up: a valid mobile number, nothing known against it. */
function signals(overrides: Partial<RiskSignals> = {}): RiskSignals {
  return {
    event: 'signup',
    country: 'GB',
    validForPlan: true,
    planType: 'MOBILE',
    knownLineType: null,
    destination: { risk: 0, key: null, adjusted: false },
    liveness: null,
    simSwap: null,
    ranges: rangesOf('+447400123456'),
    counts: counts(),
    ...overrides,
  };
}

const T = DEFAULT_RISK_THRESHOLDS;

describe('scoreOf: each rule alone', () => {
  it.each<[string, Partial<RiskSignals>, string[], 'allow' | 'flag' | 'block']>([
    ['a clean mobile number', {}, [], 'allow'],
    ['premium rate by the plan', { planType: 'PREMIUM_RATE' }, ['PREMIUM_RATE'], 'block'],
    ['premium rate as a provider answered', { knownLineType: 'PREMIUM_RATE' }, ['PREMIUM_RATE'], 'block'],
    ["a provider's mobile answer over the plan's VoIP", { planType: 'VOIP', knownLineType: 'MOBILE' }, [], 'allow'],
    ['shared cost', { planType: 'SHARED_COST' }, ['SHARED_COST'], 'block'],
    ['toll free', { planType: 'TOLL_FREE' }, ['TOLL_FREE'], 'flag'],
    ['pager', { planType: 'PAGER' }, ['PAGER'], 'flag'],
    ['personal number', { planType: 'PERSONAL_NUMBER' }, ['PERSONAL_NUMBER'], 'flag'],
    ['UAN', { planType: 'UAN' }, ['UAN'], 'flag'],
    ['VoIP', { planType: 'VOIP' }, ['VOIP'], 'flag'],
    ['a landline: noted, not flagged alone', { planType: 'FIXED_LINE' }, ['FIXED_LINE'], 'allow'],
    ['not valid for its plan', { validForPlan: false, planType: 'UNKNOWN' }, ['INVALID_NUMBER'], 'flag'],
    ['a destination at risk 100 flags alone', { destination: { risk: 100, key: '+979', adjusted: false } }, ['HIGH_RISK_DESTINATION'], 'flag'],
    ['a destination at risk 60 is noted, not flagged alone', { destination: { risk: 60, key: 'DZ', adjusted: false } }, ['HIGH_RISK_DESTINATION'], 'allow'],
    ['a destination under 40 says nothing', { destination: { risk: 39, key: 'XX', adjusted: false } }, [], 'allow'],
    ['range velocity at its threshold', { counts: counts({ rangeHour: T.range_velocity_hour }) }, ['RANGE_VELOCITY'], 'flag'],
    ['range velocity far past it', { counts: counts({ rangeHour: T.range_velocity_hour + 3 }) }, ['RANGE_VELOCITY'], 'block'],
    ['range velocity one under', { counts: counts({ rangeHour: T.range_velocity_hour - 1 }) }, [], 'allow'],
    ['a slow attack over a day', { counts: counts({ rangeDay: T.range_velocity_day }) }, ['RANGE_VELOCITY'], 'flag'],
    ['the 100-number block', { counts: counts({ blockHour: T.block_velocity_hour }) }, ['RANGE_VELOCITY'], 'flag'],
    ['the range across accounts', { counts: counts({ deploymentRangeHour: T.deployment_range_velocity_hour }) }, ['RANGE_VELOCITY'], 'flag'],
    ['near-consecutive numbers', { counts: counts({ nearbyHour: T.sequential_numbers }) }, ['SEQUENTIAL_NUMBERS'], 'flag'],
    ['a longer run of them', { counts: counts({ nearbyHour: T.sequential_numbers + 1 }) }, ['SEQUENTIAL_NUMBERS'], 'block'],
    ['one IP, many numbers', { counts: counts({ ipNumbersHour: T.ip_numbers_hour }) }, ['IP_VELOCITY'], 'flag'],
    ['one IP, many countries', { counts: counts({ ipCountriesHour: T.ip_countries_hour }) }, ['MANY_COUNTRIES'], 'flag'],
    ['one source, a country a number', { counts: counts({ sourceCountriesHour: T.source_countries_hour, sourceNumbersHour: T.source_countries_hour + 2 }) }, ['MANY_COUNTRIES'], 'flag'],
    ['one busy source over many countries is normal', { counts: counts({ sourceCountriesHour: 40, sourceNumbersHour: 2000 }) }, [], 'allow'],
    ['no IP given: the IP rules say nothing', { counts: counts({ ipNumbersHour: null, ipCountriesHour: null }) }, [], 'allow'],
    [
      'a range whose codes are never verified',
      { counts: counts({ verification: { range: { outcomes: 6, verified: 0 }, country: none, source: none, sourceHour: none, ip: none, deploymentRange: none } }) },
      ['LOW_VERIFICATION_RATE'],
      'block',
    ],
    [
      'a low rate over too few outcomes says nothing',
      { counts: counts({ verification: { range: { outcomes: T.verification_min_outcomes - 1, verified: 0 }, country: none, source: none, sourceHour: none, ip: none, deploymentRange: none } }) },
      [],
      'allow',
    ],
    [
      'a rate at the threshold says nothing',
      { counts: counts({ verification: { range: none, country: { outcomes: 100, verified: T.verification_rate }, source: none, sourceHour: none, ip: null, deploymentRange: none } }) },
      [],
      'allow',
    ],
    [
      "a source spread over countries whose last hour's codes are verified is a worldwide app, not an attack",
      { counts: counts({ sourceCountriesHour: 25, sourceNumbersHour: 42, verification: { range: none, country: none, source: none, sourceHour: { outcomes: 30, verified: 26 }, ip: none, deploymentRange: none } }) },
      [],
      'allow',
    ],
    [
      'a source spread over countries before any outcome of its hour is known flags, never blocks',
      { counts: counts({ sourceCountriesHour: 30, sourceNumbersHour: 35 }) },
      ['MANY_COUNTRIES'],
      'flag',
    ],
    [
      "a source spread over countries whose last hour's codes are not verified blocks",
      { counts: counts({ sourceCountriesHour: 30, sourceNumbersHour: 35, verification: { range: none, country: none, source: none, sourceHour: { outcomes: 10, verified: 0 }, ip: none, deploymentRange: none } }) },
      ['MANY_COUNTRIES', 'LOW_VERIFICATION_RATE'],
      'block',
    ],
    [
      "a source's last hour never verified, after a good day, blocks",
      { counts: counts({ verification: { range: none, country: none, source: { outcomes: 80, verified: 50 }, sourceHour: { outcomes: 20, verified: 0 }, ip: none, deploymentRange: none } }) },
      ['LOW_VERIFICATION_RATE'],
      'block',
    ],
    [
      'a country under attack flags its numbers, never blocks them on that alone (its real users live there too)',
      { counts: counts({ verification: { range: none, country: { outcomes: 300, verified: 5 }, source: none, sourceHour: none, ip: none, deploymentRange: none } }) },
      ['LOW_VERIFICATION_RATE'],
      'flag',
    ],
    ['not connected, as last seen', { liveness: 'ABSENT' }, ['NOT_LIVE'], 'flag'],
    ['connected', { liveness: 'CONNECTED' }, [], 'allow'],
    ['a SIM swap at sign-up is noted', { simSwap: { hoursSince: 2, swapped: true } }, ['RECENT_SIM_SWAP'], 'allow'],
    ['a SIM swap at login blocks', { event: 'login', simSwap: { hoursSince: 2, swapped: true } }, ['RECENT_SIM_SWAP'], 'block'],
    ['a SIM swap before an OTP blocks', { event: 'otp', simSwap: { hoursSince: null, swapped: true } }, ['RECENT_SIM_SWAP'], 'block'],
    ['a SIM swap older than the window', { event: 'login', simSwap: { hoursSince: T.swap_window_hours + 1, swapped: true } }, [], 'allow'],
    ['no SIM swap known', { event: 'login', simSwap: { hoursSince: null, swapped: false } }, [], 'allow'],
  ])('%s', (_, overrides, codes, recommendation) => {
    const verdict = scoreOf(signals(overrides), T);
    expect(verdict.reasons.map((reason) => reason.code)).toEqual(codes);
    expect(verdict.recommendation).toBe(recommendation);
    for (const reason of verdict.reasons) expect(reason.message.length).toBeGreaterThan(20);
  });
});

describe('scoreOf: signals together', () => {
  it('a fast burst of near-consecutive numbers in a high-cost range blocks by its third number', () => {
    const third = signals({
      destination: { risk: 90, key: '+882', adjusted: false },
      counts: counts({ rangeHour: 3, blockHour: 3, nearbyHour: 3 }),
    });
    const verdict = scoreOf(third, T);
    expect(verdict.recommendation).toBe('block');
    expect(verdict.reasons.map((reason) => reason.code)).toEqual(['SEQUENTIAL_NUMBERS', 'RANGE_VELOCITY', 'HIGH_RISK_DESTINATION']);
  });

  it('combines weights like independent probabilities, strongest reason first, never past 100', () => {
    const verdict = scoreOf(signals({ planType: 'PREMIUM_RATE', liveness: 'ABSENT', counts: counts({ nearbyHour: 10, rangeHour: 50 }) }), T);
    expect(verdict.score).toBeLessThanOrEqual(100);
    expect(verdict.score).toBeGreaterThanOrEqual(99);
    expect(verdict.reasons[0].code).toBe('PREMIUM_RATE');
  });

  it("follows the account's thresholds", () => {
    const velocity = signals({ counts: counts({ rangeHour: 4 }) });
    expect(scoreOf(velocity, { ...T, range_velocity_hour: 5 }).reasons).toEqual([]);
    expect(scoreOf(velocity, { ...T, flag_score: 50 }).recommendation).toBe('allow');
  });
});

describe('levelOf', () => {
  it.each([
    [0, 'low', 'allow'],
    [29, 'low', 'allow'],
    [30, 'medium', 'flag'],
    [69, 'medium', 'flag'],
    [70, 'high', 'block'],
    [100, 'high', 'block'],
  ])('score %d is %s: %s', (score, level, recommendation) => {
    expect(levelOf(score, T)).toEqual({ level, recommendation });
  });
});
