import { erasureHashes, storedFormHash } from './number-hash';

const KEY = Buffer.from('k'.repeat(32));

describe('storedFormHash and erasureHashes: every stored form of a number is found by a hash of the number', () => {
  const hashes = erasureHashes(KEY, '+447400170005');
  const [own] = hashes;

  it.each([
    ['+447400170005', 'E.164'],
    ['+44 7400 170005', 'separators'],
    ['00447400170005', '00 instead of +'],
    ['\uFF0B\uFF14\uFF14\uFF17\uFF14\uFF10\uFF10\uFF11\uFF17\uFF10\uFF10\uFF10\uFF15', 'full-width digits and plus'],
    ['tel:0044 7400 170005', '00 in text'],
    ['+44 (0) 7400 170005', 'the trunk 0 in brackets after the country code'],
  ])('%s (%s) carries the number’s own hash', (form) => {
    expect(storedFormHash(KEY, form)).toBe(own);
  });

  it.each([['07400 170005'], ['07400-170-005'], ['\uFF10\uFF17\uFF14\uFF10\uFF10 \uFF11\uFF17\uFF10\uFF10\uFF10\uFF15'], ['447400170005'], ['call 447400170005']])(
    '%s (digits without + or 00: a national reading) carries one of the erasure’s hashes, not the own one',
    (form) => {
      expect(hashes).toContain(storedFormHash(KEY, form));
      expect(storedFormHash(KEY, form)).not.toBe(own);
    },
  );

  /** Review of 86ed38e, point 4: digits without + were read as international (`612 345 678` as +612345678). */
  it.each([
    ['+34612345678', '612 345 678', 'Spain, no trunk prefix'],
    ['+14155552671', '(415) 555-2671', 'the US, national form'],
    ['+14155552671', '1 415 555 2671', 'the US, trunk prefix 1'],
    ['+79123456789', '8 912 345-67-89', 'Russia, trunk prefix 8'],
    ['+390612345678', '06 1234 5678', 'Italy, a national number starting with 0'],
  ])('%s is found from %s (%s)', (e164, form) => {
    expect(erasureHashes(KEY, e164)).toContain(storedFormHash(KEY, form));
  });

  it('digits without + are never read as the international number they spell', () => {
    expect(storedFormHash(KEY, '612 345 678')).not.toBe(erasureHashes(KEY, '+612345678')[0]);
  });

  it('another number, and a form with no number in it, carry none of its hashes', () => {
    expect(hashes).not.toContain(storedFormHash(KEY, '+447400170006'));
    expect(hashes).not.toContain(storedFormHash(KEY, '07400 170006'));
    expect(hashes).not.toContain(storedFormHash(KEY, '447400170006'));
    expect(storedFormHash(KEY, 'nope')).toBeNull();
    expect(storedFormHash(KEY, '')).toBeNull();
  });
});
