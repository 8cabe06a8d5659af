import { portedCarrier, SLOW_ANSWER_DELAY_MS, testNumberRule } from './test-numbers';

describe('test-number rules (API.md section 10)', () => {
  it.each([
    ['+447400120000', { kind: 'answer', status: 'ABSENT', isPorted: false }],
    ['+447400120001', { kind: 'answer', status: 'UNDETERMINED', isPorted: false }],
    ['+447400120002', { kind: 'answer', status: 'CONNECTED', isPorted: true }],
    ['+447400120003', { kind: 'failure' }],
    ['+447400120004', { kind: 'slow', delayMs: SLOW_ANSWER_DELAY_MS, status: 'CONNECTED', isPorted: false }],
    ['+447400120005', { kind: 'answer', status: 'CONNECTED', isPorted: false }],
    ['+14155552671', { kind: 'answer', status: 'CONNECTED', isPorted: false }],
    ['4915123450000', { kind: 'answer', status: 'ABSENT', isPorted: false }],
  ])('%s → %j', (number, rule) => {
    expect(testNumberRule(number)).toEqual(rule);
  });

  it('makes the slow answer longer than the default 3 s timeout', () => {
    expect(SLOW_ANSWER_DELAY_MS).toBeGreaterThan(3000);
  });

  it.each([
    ['GB', 'Three', 'EE'],
    ['GB', 'EE', 'Vodafone'],
    ['DE', 'T-Mobile', 'Vodafone'],
    ['US', null, 'T-Mobile USA'],
    [null, null, 'Simulated Ported Operator'],
    ['ZZ', 'Simulated Ported Operator', 'Simulated Other Operator'],
  ])('in %s a number ported away from %s is now with %s', (region, original, expected) => {
    expect(portedCarrier(region, original)).toBe(expected);
  });
});
