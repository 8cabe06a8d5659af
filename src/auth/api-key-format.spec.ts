import { bearerToken, displayPrefix, generateApiKey, hashApiKey, looksLikeApiKey } from './api-key-format';

describe('API key format', () => {
  it('generates pf_live_ keys with 32 base62 characters, all different', () => {
    const keys = Array.from({ length: 200 }, generateApiKey);
    for (const key of keys) expect(key).toMatch(/^pf_live_[0-9A-Za-z]{32}$/);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('hashes with SHA-256 to 64 hex characters, deterministically', () => {
    expect(hashApiKey('pf_live_x')).toBe(hashApiKey('pf_live_x'));
    expect(hashApiKey('pf_live_x')).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey('pf_live_x')).not.toBe(hashApiKey('pf_live_y'));
  });

  it('shows only the fixed prefix and four characters of the secret', () => {
    expect(displayPrefix('pf_live_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345')).toBe('pf_live_ABCD');
  });

  it.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['Bearer  abc ', 'abc'],
    ['Basic abc', undefined],
    ['Bearer', undefined],
    ['Bearer a b', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('reads the bearer token from %p', (header, expected) => {
    expect(bearerToken(header)).toBe(expected);
  });

  it('recognises the key shape', () => {
    expect(looksLikeApiKey(generateApiKey())).toBe(true);
    expect(looksLikeApiKey('pf_live_short')).toBe(false);
    expect(looksLikeApiKey('sk_live_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345')).toBe(false);
  });
});
