import { maskPhonesIn, maskFields } from './redaction';

describe('maskPhonesIn', () => {
  it.each([
    ['lookup of +447700900123 failed', 'lookup of +44770090**** failed'],
    ['/api/v1/x/%2B447700900123?a=1', '/api/v1/x/%2B44770090****?a=1'],
    ['/api/v1/x/%2b14155552671', '/api/v1/x/%2b1415555****'],
    ['two: +14155552671,+447400120003', 'two: +1415555****,+44740012****'],
    ['short +1234567', 'short +123****'],
    // Written with separators, or URL-encoded with them (the review's `?phone=%2B44%207400%20123456`):
    ['number +44 7400 123456.', 'number +44740012****.'],
    ['?phone=%2B44%207400%20123456&x=1', '?phone=%2B44740012****&x=1'],
    ['?phone=%2b44+7400+123456', '?phone=%2b44740012****'],
    ['+1 (415) 555-2671', '+1415555****'],
    ['+44.7400.123.456', '+44740012****'],
    ['%2B1%20%28415%29%20555%2D2671', '%2B1415555****'],
    ['call +44 7400 123456, or +1 415 555 2671', 'call +44740012****, or +1415555****'],
  ])('masks %j', (text, expected) => {
    expect(maskPhonesIn(text)).toBe(expected);
  });

  it.each(['request 550e8400-e29b-41d4-a716-446655440000 took 12 ms', 'charge 1234567890123 settled', 'duration +12 ms', '+1415555****'])(
    'leaves %j alone',
    (text) => {
      expect(maskPhonesIn(text)).toBe(text);
    },
  );

  it('masks string fields and keeps the others', () => {
    expect(maskFields({ url: '/x/+14155552671', status: 200 })).toEqual({ url: '/x/+1415555****', status: 200 });
  });

  it('masks the string fields of nested objects (an error and its cause)', () => {
    expect(maskFields({ err: { message: 'x +44 7400 123456', cause: { detail: '(+14155552671)' } } })).toEqual({
      err: { message: 'x +44740012****', cause: { detail: '(+1415555****)' } },
    });
  });
});
