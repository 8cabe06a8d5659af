import { durationHours, simSwapFields } from './sim-swap-fields';

const NOW = new Date('2026-11-28T12:00:00Z');
const hoursAgo = (hours: number) => new Date(NOW.getTime() - hours * 3_600_000);

describe('the SIM swap fields from what an upstream says', () => {
  it.each([
    ['a change 2 h ago, window 168', { lastChangeAt: hoursAgo(2) }, 168, true],
    ['a change 100 h ago, window 72', { lastChangeAt: hoursAgo(100) }, 72, false],
    ['a change exactly at the window', { lastChangeAt: hoursAgo(72) }, 72, true],
    ['swapped within 24 h, window 168: within the window', { lastChangeAt: null, period: { hours: 24, swapped: true } }, 168, true],
    ['swapped within 240 h, window 168: not known', { lastChangeAt: null, period: { hours: 240, swapped: true } }, 168, null],
    ['no swap within 240 h, window 168: none', { lastChangeAt: null, period: { hours: 240, swapped: false } }, 168, false],
    ['no swap within 24 h, window 168: not known', { lastChangeAt: null, period: { hours: 24, swapped: false } }, 168, null],
    ['nothing said', { lastChangeAt: null }, 168, null],
  ])('%s', (_name, evidence, window, swapped) => {
    const fields = simSwapFields(evidence, NOW, window);
    expect(fields.sim_swapped).toBe(swapped);
    expect(fields.last_sim_swap_at).toBe(evidence.lastChangeAt ? evidence.lastChangeAt.toISOString() : null);
  });

  it.each([
    ['PT24H', 24],
    ['P7D', 168],
    ['PT15282H33M44S', 15282 + 33 / 60 + 44 / 3600],
    ['P1DT2H', 26],
    ['24h', undefined],
    ['P', undefined],
    ['PT', undefined],
  ])('reads the ISO 8601 duration %s', (text, hours) => {
    expect(durationHours(text)).toBe(hours);
  });
});
