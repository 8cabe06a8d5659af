import { erasureHashes, storedFormHash } from './number-hash';

const KEY = Buffer.from('k'.repeat(32));

describe('storedFormHash and erasureHashes: every stored form of a number is found by a hash of the number', () => {
  const [own, national] = erasureHashes(KEY, '+447400170005');

  it.each([
    ['+447400170005', 'E.164'],
    ['+44 7400 170005', 'separators'],
    ['00447400170005', '00 instead of +'],
    ['\uFF0B\uFF14\uFF14\uFF17\uFF14\uFF10\uFF10\uFF11\uFF17\uFF10\uFF10\uFF10\uFF15', 'full-width digits and plus'],
    ['447400170005', 'its digits without +'],
    ['call 447400170005', 'its digits in text'],
    ['tel:0044 7400 170005', '00 in text'],
  ])('%s (%s) carries the number’s own hash', (form) => {
    expect(storedFormHash(KEY, form)).toBe(own);
  });

  it.each([['07400 170005'], ['07400-170-005'], ['\uFF10\uFF17\uFF14\uFF10\uFF10 \uFF11\uFF17\uFF10\uFF10\uFF10\uFF15']])('%s (a national form) carries its national hash', (form) => {
    expect(storedFormHash(KEY, form)).toBe(national);
  });

  it('another number, and a form with no number in it, carry neither', () => {
    expect([own, national]).not.toContain(storedFormHash(KEY, '+447400170006'));
    expect([own, national]).not.toContain(storedFormHash(KEY, '07400 170006'));
    expect(storedFormHash(KEY, 'nope')).toBeNull();
    expect(storedFormHash(KEY, '')).toBeNull();
  });

  it('a national number whose national significant number starts with 0 (Italy) is found from its national form too', () => {
    expect(erasureHashes(KEY, '+390612345678')).toContain(storedFormHash(KEY, '06 1234 5678'));
  });
});
