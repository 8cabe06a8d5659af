import { MAX_STORED_INPUT, planJob } from './plan';

describe('planJob', () => {
  it('normalises valid entries, keeps invalid ones as sent, and charges only the valid', () => {
    const plan = planJob(['+44 7400 123456', 'nope', '+447400123457', '0044'], 10);
    expect(plan.entries).toEqual([
      { index: 0, phone: '+447400123456', valid: true, chunk: 0 },
      { index: 1, phone: 'nope', valid: false, chunk: null },
      { index: 2, phone: '+447400123457', valid: true, chunk: 0 },
      { index: 3, phone: '0044', valid: false, chunk: null },
    ]);
    expect(plan).toMatchObject({ validCount: 2, distinctCount: 2, chunks: 1 });
  });

  it('puts every copy of a number in the chunk of its first copy, and sizes chunks by distinct numbers', () => {
    const phones = ['+447400100001', '+447400100002', '+447400100001', '+447400100003', '+447400100002', '+447400100004'];
    const plan = planJob(phones, 2);
    expect(plan.entries.map((entry) => entry.chunk)).toEqual([0, 0, 0, 1, 0, 1]);
    expect(plan).toMatchObject({ validCount: 6, distinctCount: 4, chunks: 2 });
  });

  it('keeps each entry\'s reference, and plans entries with and without one alike', () => {
    const plan = planJob([{ phone: '+447400123456', reference: 'r-1' }, '+447400123456', { phone: 'nope', reference: 'r-3' }], 10);
    expect(plan.entries).toEqual([
      { index: 0, phone: '+447400123456', valid: true, chunk: 0, reference: 'r-1' },
      { index: 1, phone: '+447400123456', valid: true, chunk: 0 },
      { index: 2, phone: 'nope', valid: false, chunk: null, reference: 'r-3' },
    ]);
    expect(plan).toMatchObject({ validCount: 2, distinctCount: 1, chunks: 1 });
  });

  it('still plans one chunk when nothing is to be looked up', () => {
    expect(planJob(['x', ''], 5)).toMatchObject({ validCount: 0, distinctCount: 0, chunks: 1 });
  });

  it('cuts long input, and makes NUL and lone surrogates storable', () => {
    const [long, nul, surrogate] = planJob(['9'.repeat(500), 'a\0b', 'x\uD800'], 5).entries;
    expect(long.phone).toHaveLength(MAX_STORED_INPUT);
    expect(nul.phone).toBe('a\uFFFDb');
    expect(surrogate.phone).toBe('x\uFFFD');
  });
});
