import { rangesOf } from './number-ranges';

describe('rangesOf', () => {
  it.each([
    ['+447400123456', { range: '+44740012', block: '+4474001234', ten: '+44740012345', tenBefore: '+44740012344', tenAfter: '+44740012346' }],
    ['+447400123409', { range: '+44740012', block: '+4474001234', ten: '+44740012340', tenBefore: '+44740012339', tenAfter: '+44740012341' }],
    // The last block of ten of its length has no next one; the first has no previous one.
    ['+9999999999', { range: '+999999', block: '+99999999', ten: '+999999999', tenBefore: '+999999998', tenAfter: null }],
    ['+1000000001', { range: '+100000', block: '+10000000', ten: '+100000000', tenBefore: null, tenAfter: '+100000001' }],
    // Short numbers keep at least their first digit.
    ['+123', { range: '+1', block: '+1', ten: '+12', tenBefore: '+11', tenAfter: '+13' }],
  ])('%s', (e164, expected) => {
    expect(rangesOf(e164)).toEqual(expected);
  });

  it('puts near-consecutive numbers in neighbouring blocks of ten', () => {
    const a = rangesOf('+447400123459');
    const b = rangesOf('+447400123460');
    expect(a.tenAfter).toBe(b.ten);
    expect(b.tenBefore).toBe(a.ten);
  });
});
