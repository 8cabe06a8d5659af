import type { EnabledChecks } from '../checks/checks';
import { BUILT_IN_CHECKS } from '../checks/built-in-checks';
import { CheckRegistry } from '../checks/check-registry';
import type { ReportedAnswer } from '../checks/phone-answer.dto';
import { nextCheckAt, roundChargeReference, roundSource, WatchRules } from './watch-rules';

const rules = new WatchRules(new CheckRegistry(BUILT_IN_CHECKS.map((definition) => ({ definition }))));
const changesBetween: WatchRules['changesBetween'] = (before, after) => rules.changesBetween(before, after);

const CONNECTED: ReportedAnswer = { country: 'GB', valid: true, status: 'CONNECTED', carrier: 'Three', line_type: 'MOBILE', is_ported: false };
const ALL: EnabledChecks = { network_status: true, line_type: true, portability: true };
const at = (result: ReportedAnswer, checks: EnabledChecks = ALL) => ({ result, checks });

describe('changesBetween', () => {
  it('reports nothing for the first answer: it is the baseline', () => {
    expect(changesBetween(null, at(CONNECTED))).toEqual([]);
  });

  it('reports nothing when the answer is the same', () => {
    expect(changesBetween(at(CONNECTED), at({ ...CONNECTED }))).toEqual([]);
  });

  it('reports each watched field that differs, with before and after', () => {
    expect(changesBetween(at(CONNECTED), at({ ...CONNECTED, status: 'ABSENT', valid: false }))).toEqual([
      { field: 'status', before: 'CONNECTED', after: 'ABSENT' },
      { field: 'valid', before: true, after: false },
    ]);
    expect(changesBetween(at(CONNECTED), at({ ...CONNECTED, carrier: 'EE', is_ported: true, line_type: 'VOIP' }))).toEqual([
      { field: 'carrier', before: 'Three', after: 'EE' },
      { field: 'line_type', before: 'MOBILE', after: 'VOIP' },
      { field: 'is_ported', before: false, after: true },
    ]);
  });

  it('ignores the country, which a number never changes', () => {
    expect(changesBetween(at(CONNECTED), at({ ...CONNECTED, country: 'JE' }))).toEqual([]);
  });
});

describe('nextCheckAt', () => {
  it.each([
    ['2026-11-23T05:00:00.000Z', 'daily', '2026-11-24T05:00:00.000Z'],
    ['2026-11-23T05:00:00.000Z', 'weekly', '2026-11-30T05:00:00.000Z'],
    ['2026-11-23T05:00:00.000Z', 'monthly', '2026-12-23T05:00:00.000Z'],
    ['2026-01-31T05:00:00.000Z', 'monthly', '2026-02-28T05:00:00.000Z'],
    ['2028-01-31T05:00:00.000Z', 'monthly', '2028-02-29T05:00:00.000Z'],
    ['2026-12-15T00:00:00.000Z', 'monthly', '2027-01-15T00:00:00.000Z'],
  ] as const)('%s + %s = %s', (from, interval, expected) => {
    expect(nextCheckAt(new Date(from), interval).toISOString()).toBe(expected);
  });
});

describe('ledger names of a round', () => {
  const id = '5b0c6f1e-8a8c-4f6e-9a52-0d4c1d8b2f10';

  it('fits the ledger source column (64) and reads as the round', () => {
    expect(roundSource(id, 99_999)).toBe(`watchlist-${id}-round-99999`);
    expect(roundSource(id, 99_999).length).toBeLessThanOrEqual(64);
  });

  it('names one entry in one round', () => {
    expect(roundChargeReference(id, 3, '42')).toBe(`watchlist:${id}:3:42`);
  });
});

describe('changesBetween rounds run with different checks', () => {
  it('ignores the fields of a check turned off (or on) between the rounds: their neutral values are not news', () => {
    const noNetwork: EnabledChecks = { ...ALL, network_status: false };
    const neutral: ReportedAnswer = { ...CONNECTED, status: 'UNDETERMINED', carrier: 'EE' };
    expect(changesBetween(at(CONNECTED), at(neutral, noNetwork))).toEqual([]);
    expect(changesBetween(at(neutral, noNetwork), at(CONNECTED))).toEqual([]);
    expect(changesBetween(at(CONNECTED, { ...ALL, line_type: false }), at({ ...CONNECTED, line_type: 'UNKNOWN' }))).toEqual([]);
    expect(changesBetween(at(CONNECTED, { ...ALL, portability: false }), at({ ...CONNECTED, is_ported: true }))).toEqual([]);
  });

  it('still compares the fields of checks enabled in both rounds, and the carrier when it came from the same check', () => {
    const networkOnly: EnabledChecks = { network_status: true, line_type: false, portability: false };
    expect(changesBetween(at(CONNECTED, networkOnly), at({ ...CONNECTED, status: 'ABSENT', valid: false, line_type: 'UNKNOWN' }, { ...ALL, line_type: false }))).toEqual([
      { field: 'status', before: 'CONNECTED', after: 'ABSENT' },
      { field: 'valid', before: true, after: false },
    ]);
    const portabilityOnly: EnabledChecks = { network_status: false, line_type: false, portability: true };
    expect(changesBetween(at(CONNECTED, portabilityOnly), at({ ...CONNECTED, carrier: 'EE' }, portabilityOnly))).toEqual([{ field: 'carrier', before: 'Three', after: 'EE' }]);
  });

  it('compares every field of an answer stored before its checks were kept', () => {
    expect(changesBetween({ result: CONNECTED, checks: null }, at({ ...CONNECTED, status: 'ABSENT' }))).toEqual([{ field: 'status', before: 'CONNECTED', after: 'ABSENT' }]);
  });
});
