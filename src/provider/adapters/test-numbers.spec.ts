import { Alternation, alternatingAnswer, portedCarrier, SLOW_ANSWER_DELAY_MS, testNumberRule } from './test-numbers';

describe('test-number rules (API.md section 10)', () => {
  it.each([
    ['+447400120000', { kind: 'answer', status: 'ABSENT', isPorted: false }],
    ['+447400120001', { kind: 'answer', status: 'UNDETERMINED', isPorted: false }],
    ['+447400120002', { kind: 'answer', status: 'CONNECTED', isPorted: true }],
    ['+447400120003', { kind: 'failure' }],
    ['+447400120004', { kind: 'slow', delayMs: SLOW_ANSWER_DELAY_MS, status: 'CONNECTED', isPorted: false }],
    ['+447400120005', { kind: 'alternating', changes: 'status' }],
    ['+447400120006', { kind: 'alternating', changes: 'operator' }],
    ['+447400120007', { kind: 'answer', status: 'CONNECTED', isPorted: false }],
    ['+14155552671', { kind: 'answer', status: 'CONNECTED', isPorted: false }],
    ['4915123450000', { kind: 'answer', status: 'ABSENT', isPorted: false }],
  ])('%s → %j', (number, rule) => {
    expect(testNumberRule(number)).toEqual(rule);
  });

  it('alternates a 0005 number CONNECTED, ABSENT, CONNECTED at each lookup, each number on its own', () => {
    const alternation = new Alternation();
    const rule = { kind: 'alternating', changes: 'status' } as const;
    const statuses = [1, 2, 3].map(() => alternatingAnswer(rule, alternation, 'a').status);
    expect(statuses).toEqual(['CONNECTED', 'ABSENT', 'CONNECTED']);
    expect(alternatingAnswer(rule, alternation, 'b')).toEqual({ status: 'CONNECTED', otherOperator: false });
  });

  it('alternates the operator of a 0006 number, always CONNECTED', () => {
    const alternation = new Alternation();
    const rule = { kind: 'alternating', changes: 'operator' } as const;
    expect([1, 2, 3].map(() => alternatingAnswer(rule, alternation, 'a'))).toEqual([
      { status: 'CONNECTED', otherOperator: false },
      { status: 'CONNECTED', otherOperator: true },
      { status: 'CONNECTED', otherOperator: false },
    ]);
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
