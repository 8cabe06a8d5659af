import { BUILT_IN_CHECKS } from './built-in-checks';
import type { CheckAnswer, FieldValue } from './check-definition';
import { CheckRegistry, NumberReport } from './check-registry';
import { csvHeader } from './csv-layout';

const registry = new CheckRegistry(BUILT_IN_CHECKS.map((definition) => ({ definition })));
const all = { network_status: true, line_type: true, portability: true };
const none = { network_status: false, line_type: false, portability: false };
const record = (check: string, fields: Record<string, FieldValue>): CheckAnswer => ({ check, fields, provider: 'test', observedAt: '2026-11-24T00:00:00.000Z' });
const answers = {
  network_status: record('network_status', { status: 'CONNECTED', carrier: 'EE', status_reason: 'CONNECTED', mcc: '234', mnc: '30' }),
  line_type: record('line_type', { line_type: 'MOBILE' }),
  portability: record('portability', { is_ported: true, carrier: 'EE', mcc: '234', mnc: '30' }),
};
const valid = (checks: Record<string, boolean>, found: NumberReport['answers']): NumberReport => ({ region: 'GB', validForPlan: true, checks, answers: found });

describe('CheckRegistry.toPhoneAnswer', () => {
  it('fills every field from the enabled checks', () => {
    expect(registry.toPhoneAnswer(valid(all, answers))).toEqual({ country: 'GB', valid: true, status: 'CONNECTED', carrier: 'EE', line_type: 'MOBILE', is_ported: true });
  });

  it('leaves disabled checks at their neutral values', () => {
    expect(registry.toPhoneAnswer(valid(none, {}))).toEqual({ country: 'GB', valid: true, status: 'UNDETERMINED', carrier: null, line_type: 'UNKNOWN', is_ported: false });
  });

  it('ignores the records of checks that are off', () => {
    expect(registry.toPhoneAnswer(valid(none, answers))).toEqual({ country: 'GB', valid: true, status: 'UNDETERMINED', carrier: null, line_type: 'UNKNOWN', is_ported: false });
  });

  it('takes the carrier from portability when network status is off, or does not know it', () => {
    const onlyPortability = valid({ ...none, portability: true }, { portability: record('portability', { is_ported: false, carrier: 'Vodafone' }) });
    expect(registry.toPhoneAnswer(onlyPortability)).toMatchObject({ carrier: 'Vodafone', status: 'UNDETERMINED' });
    const unknownToNetwork = valid(all, { ...answers, network_status: record('network_status', { status: 'CONNECTED', carrier: null }) });
    expect(registry.toPhoneAnswer(unknownToNetwork).carrier).toBe('EE');
  });

  it('is not valid when the network says ABSENT', () => {
    const absent = valid(all, { ...answers, network_status: record('network_status', { status: 'ABSENT', carrier: null }) });
    expect(registry.toPhoneAnswer(absent)).toMatchObject({ valid: false, status: 'ABSENT' });
  });

  it('answers ABSENT for a number invalid for its plan, whatever the settings', () => {
    for (const checks of [all, none]) {
      expect(registry.toPhoneAnswer({ region: 'US', validForPlan: false, checks, answers: {} })).toEqual({
        country: 'US', valid: false, status: 'ABSENT', carrier: null, line_type: 'UNKNOWN', is_ported: false,
      });
    }
  });

  it('always has exactly the six fields, whatever the records hold', () => {
    expect(Object.keys(registry.toPhoneAnswer(valid(all, answers))).sort()).toEqual(['carrier', 'country', 'is_ported', 'line_type', 'status', 'valid']);
  });
});

describe('CheckRegistry, derived from the definitions', () => {
  it('prices a call at the sum of its enabled checks, each subset a distinct total', () => {
    const totals = new Set<number>();
    for (const mask of [0, 1, 2, 3, 4, 5, 6, 7]) {
      totals.add(registry.costOf({ network_status: (mask & 4) > 0, line_type: (mask & 1) > 0, portability: (mask & 2) > 0 }));
    }
    expect([...totals].sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('reads prices and cache lifetimes from the variables the definitions name, else their defaults', () => {
    const tuned = new CheckRegistry(BUILT_IN_CHECKS.map((definition) => ({ definition })), { PRICE_LINE_TYPE: 9, CACHE_TTL_PORTABILITY_SECONDS: 5 });
    expect(tuned.price('line_type')).toBe(9);
    expect(tuned.price('network_status')).toBe(4);
    expect(tuned.cacheTtlSeconds('portability')).toBe(5);
    expect(tuned.cacheTtlSeconds('line_type')).toBe(2_592_000);
    expect(tuned.unusedVariables()).toEqual([]);
    expect(new CheckRegistry(BUILT_IN_CHECKS.map((definition) => ({ definition })), { PRICE_LINETYPE: 9 }).unusedVariables()).toEqual(['PRICE_LINETYPE']);
  });

  it("lists the watched fields as the contract's", () => {
    expect(registry.watchedFields()).toEqual(['status', 'carrier', 'line_type', 'is_ported', 'valid', 'sim_swapped', 'last_sim_swap_at']);
  });

  describe("a bulk job's CSV layout", () => {
    const SIX = ['country', 'valid', 'status', 'carrier', 'line_type', 'is_ported'];
    const extra = { ...BUILT_IN_CHECKS[1], name: 'roaming', shows: {}, reports: ['roaming'], watches: [], csvColumns: ['roaming'] };
    const grown = new CheckRegistry([...BUILT_IN_CHECKS, extra].map((definition) => ({ definition })));

    it("is the answer's six fields always, then provenance for the job's enabled checks", () => {
      expect(registry.csvLayout(all)).toEqual({ answer: SIX, answeredBy: ['network_status', 'line_type', 'portability'] });
      expect(registry.csvLayout({ ...none, network_status: true })).toEqual({ answer: SIX, answeredBy: ['network_status'] });
    });

    it('does not change when a check is registered that the job does not have on', () => {
      for (const checks of [all, { ...none, line_type: true }]) expect(grown.csvLayout({ ...checks, roaming: false })).toEqual(registry.csvLayout(checks));
      expect(grown.csvLayout({ ...none, network_status: true, roaming: true })).toEqual({ answer: [...SIX, 'roaming'], answeredBy: ['network_status', 'roaming'] });
    });

    it('is the header phone, reference, the answer, error_code, error_message, then <check>_provider and <check>_observed_at', () => {
      expect(csvHeader(registry.csvLayout({ ...none, portability: true }))).toEqual(['phone', 'reference', ...SIX, 'error_code', 'error_message', 'portability_provider', 'portability_observed_at']);
    });
  });

  it('reports nothing beyond the six fields for the three checks of /filter', () => {
    expect(Object.keys(registry.toReportedAnswer(valid(all, answers))).sort()).toEqual(['carrier', 'country', 'is_ported', 'line_type', 'status', 'valid']);
  });

  describe('the SIM swap check', () => {
    const swap = record('sim_swap', { sim_swapped: true, last_sim_swap_at: '2026-11-23T22:00:00.000Z' });
    const on = { ...all, sim_swap: true };

    it('never shows in /filter, but bulk results and watchlists carry its two fields', () => {
      const report = valid(on, { ...answers, sim_swap: swap });
      expect(registry.toPhoneAnswer(report)).toEqual(registry.toPhoneAnswer(valid(all, answers)));
      expect(registry.toReportedAnswer(report)).toMatchObject({ sim_swapped: true, last_sim_swap_at: '2026-11-23T22:00:00.000Z' });
      expect(registry.watchedFields()).toEqual(expect.arrayContaining(['sim_swapped', 'last_sim_swap_at']));
    });

    it('adds its columns to the CSV only of jobs that have it on', () => {
      const SIX = ['country', 'valid', 'status', 'carrier', 'line_type', 'is_ported'];
      expect(registry.csvLayout(on).answer).toEqual([...SIX, 'sim_swapped', 'last_sim_swap_at']);
      expect(registry.csvLayout({ ...all, sim_swap: false }).answer).toEqual(SIX);
    });

    it('is off by default, with its own price and cache lifetime', () => {
      expect(registry.defaultNames()).not.toContain('sim_swap');
      expect(registry.price('sim_swap')).toBe(3);
      expect(registry.cacheTtlSeconds('sim_swap')).toBe(900);
      expect(new CheckRegistry(BUILT_IN_CHECKS.map((definition) => ({ definition })), { PRICE_SIM_SWAP: 5, CACHE_TTL_SIM_SWAP_SECONDS: 60 }).price('sim_swap')).toBe(5);
    });
  });

  it('turns stored names into every check on or off, ignoring names no longer registered', () => {
    expect(registry.fromEnabledNames(['line_type', 'retired_check'])).toEqual({ network_status: false, line_type: true, portability: false, sim_swap: false });
    expect(registry.defaultNames()).toEqual(['network_status']);
  });

  it('refuses a name registered twice or not in lower_snake_case', () => {
    expect(() => registry.register({ definition: BUILT_IN_CHECKS[0] })).toThrow(/twice/);
    expect(() => registry.register({ definition: { ...BUILT_IN_CHECKS[0], name: 'Sim-Swap' } })).toThrow(/lower_snake_case/);
  });
});

describe('CheckRegistry.suppliedBy: which check a field of an answer came from', () => {
  it('the carrier from portability when network status (a Twilio backup: no carrier) did not know it', () => {
    const report = valid(all, { ...answers, network_status: record('network_status', { status: 'CONNECTED', carrier: null, status_reason: 'CONNECTED' }) });
    expect(registry.toPhoneAnswer(report).carrier).toBe('EE');
    expect(registry.suppliedBy('carrier', report)).toBe('portability'); // sourceOf said network_status
    expect(registry.suppliedBy('status', report)).toBe('network_status');
  });

  it('the first enabled check that knew it, and the watching check for a field nobody knew', () => {
    expect(registry.suppliedBy('carrier', valid(all, answers))).toBe('network_status');
    const unknown = valid(all, { ...answers, network_status: record('network_status', { status: 'CONNECTED', carrier: null }), portability: record('portability', { is_ported: false, carrier: null }) });
    expect(registry.suppliedBy('carrier', unknown)).toBe(registry.sourceOf('carrier', all));
  });
});
