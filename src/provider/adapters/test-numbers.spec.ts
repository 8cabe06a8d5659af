import { NETWORK_SITUATIONS, portedCarrier, SLOW_ANSWER_DELAY_MS, statusOf, TestNumberTable, testNumberRule } from './test-numbers';

describe('test-number rules (the table in docs/api.md)', () => {
  it.each([
    ['+447400120000', { kind: 'answer', situation: 'switched_off', isPorted: false }],
    ['+447400120001', { kind: 'answer', situation: 'unknown', isPorted: false }],
    ['+447400120002', { kind: 'answer', situation: 'reachable', isPorted: true }],
    ['+447400120003', { kind: 'failure' }],
    ['+447400120004', { kind: 'slow', delayMs: SLOW_ANSWER_DELAY_MS, situation: 'reachable', isPorted: false }],
    ['+447400120005', { kind: 'answer', situation: 'reachable', isPorted: false }],
    ['+447400120006', { kind: 'answer', situation: 'reachable', isPorted: false }],
    ['+447400120007', { kind: 'answer', situation: 'reachable', isPorted: false }],
    ['+447400120008', { kind: 'answer', situation: 'subscribed', isPorted: false }],
    ['+447400120009', { kind: 'answer', situation: 'not_assigned', isPorted: false }],
    ['+14155552671', { kind: 'answer', situation: 'reachable', isPorted: false }],
    ['4915123450000', { kind: 'answer', situation: 'switched_off', isPorted: false }],
  ])('%s → %j', (number, rule) => {
    expect(testNumberRule(number)).toEqual(rule);
  });

  it('alternates a number ending 0005 between CONNECTED and ABSENT at each lookup', () => {
    const table = new TestNumberTable();
    const statuses = [1, 2, 3, 4].map(() => table.rule('+447400120005', 'network_status'));
    expect(statuses.map((rule) => (rule.kind === 'answer' ? statusOf(rule) : rule.kind))).toEqual(['CONNECTED', 'ABSENT', 'CONNECTED', 'ABSENT']);
  });

  it('alternates the operator of a number ending 0006 (ported away and back) at each lookup', () => {
    const table = new TestNumberTable();
    const turns = [1, 2, 3].map(() => table.rule('+447400120006', 'network_status'));
    expect(turns).toEqual([
      { kind: 'answer', situation: 'reachable', isPorted: false },
      { kind: 'answer', situation: 'reachable', isPorted: true },
      { kind: 'answer', situation: 'reachable', isPorted: false },
    ]);
  });

  it('counts each kind of lookup and each number apart, so the lookups of one answer agree', () => {
    const table = new TestNumberTable();
    table.rule('+447400120005', 'network_status');
    expect(table.rule('+447400120005', 'portability')).toEqual({ kind: 'answer', situation: 'reachable', isPorted: false });
    expect(table.rule('+447400990005', 'network_status')).toEqual({ kind: 'answer', situation: 'reachable', isPorted: false });
    expect(table.rule('+447400120005', 'network_status')).toEqual({ kind: 'answer', situation: 'switched_off', isPorted: false });
  });

  it('answers the other numbers by the fixed table, however often they are looked up', () => {
    const table = new TestNumberTable();
    for (let i = 0; i < 3; i++) {
      expect(table.rule('+447400120000', 'network_status')).toEqual({ kind: 'answer', situation: 'switched_off', isPorted: false });
      expect(table.rule('+447400123456', 'network_status')).toEqual({ kind: 'answer', situation: 'reachable', isPorted: false });
    }
  });

  it('gives two tables (two sandboxes, two simulators) their own counts', () => {
    const first = new TestNumberTable();
    first.rule('+447400120005', 'network_status');
    expect(new TestNumberTable().rule('+447400120005', 'network_status')).toEqual({ kind: 'answer', situation: 'reachable', isPorted: false });
  });

  it('means one status by each situation, every status meant by one at least', () => {
    expect(NETWORK_SITUATIONS).toEqual({ reachable: 'CONNECTED', switched_off: 'ABSENT', not_assigned: 'ABSENT', subscribed: 'UNDETERMINED', unknown: 'UNDETERMINED' });
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
