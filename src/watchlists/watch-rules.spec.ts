import type { FilterResultDto } from '../provider/dto/filter-result.dto';
import { changesBetween, nextCheckAt, roundChargeReference, roundSource } from './watch-rules';

const CONNECTED: FilterResultDto = { country: 'GB', valid: true, status: 'CONNECTED', carrier: 'Three', line_type: 'MOBILE', is_ported: false };

describe('changesBetween', () => {
  it('reports nothing for the first answer: it is the baseline', () => {
    expect(changesBetween(null, CONNECTED)).toEqual([]);
  });

  it('reports nothing when the answer is the same', () => {
    expect(changesBetween(CONNECTED, { ...CONNECTED })).toEqual([]);
  });

  it('reports each watched field that differs, with before and after', () => {
    expect(changesBetween(CONNECTED, { ...CONNECTED, status: 'ABSENT', valid: false })).toEqual([
      { field: 'status', before: 'CONNECTED', after: 'ABSENT' },
      { field: 'valid', before: true, after: false },
    ]);
    expect(changesBetween(CONNECTED, { ...CONNECTED, carrier: 'EE', is_ported: true, line_type: 'VOIP' })).toEqual([
      { field: 'carrier', before: 'Three', after: 'EE' },
      { field: 'line_type', before: 'MOBILE', after: 'VOIP' },
      { field: 'is_ported', before: false, after: true },
    ]);
  });

  it('ignores the country, which a number never changes', () => {
    expect(changesBetween(CONNECTED, { ...CONNECTED, country: 'JE' })).toEqual([]);
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
