import { keyedHash, requestHash } from './keyed-hash';

describe('keyedHash', () => {
  it('is HMAC-SHA-256 (RFC 4231, test case 2), the same on every call with the same key', () => {
    const key = Buffer.from('Jefe');
    const expected = '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843';
    expect(keyedHash(key, 'what do ya want for nothing?')).toBe(expected);
    expect(keyedHash(key, 'what do ya want for nothing?')).toBe(expected);
  });

  it('depends on the key: another Buffer with other bytes gives another hash', () => {
    expect(keyedHash(Buffer.from('key one'), '+447400123456')).not.toBe(keyedHash(Buffer.from('key two'), '+447400123456'));
    expect(keyedHash(Buffer.from('key one'), '+447400123456')).toBe(keyedHash(Buffer.from('key one'), '+447400123456'));
  });

  it('takes an empty key as HMAC does (RFC 4231 has none; the value is the known HMAC of "" under "")', () => {
    expect(keyedHash(Buffer.alloc(0), '')).toBe('b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad');
  });

  it('a request hash matches its own keyed hash', () => {
    const key = Buffer.from('k');
    const hash = requestHash({ phone: '+447400123456' }, key);
    expect(hash.matches(hash.keyed)).toBe(true);
    expect(hash.matches(keyedHash(key, 'something else'))).toBe(false);
  });
});
