import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveDataHashKey } from './data-hash-key';
import { DATA_HASH_KEY_REQUIRED, validateEnvironment } from './environment';

describe('DATA_HASH_KEY', () => {
  const file = () => join(mkdtempSync(join(tmpdir(), 'pf-key-')), '.data', 'data-hash-key');

  it('uses the configured key as it is', () => {
    expect(resolveDataHashKey('k'.repeat(32), 'production', file()).toString()).toBe('k'.repeat(32));
  });

  it('refuses to start in production without one, in one line', () => {
    expect(() => validateEnvironment({ NODE_ENV: 'production' })).toThrow(DATA_HASH_KEY_REQUIRED);
    expect(DATA_HASH_KEY_REQUIRED).not.toContain('\n');
    expect(() => resolveDataHashKey(undefined, 'production', file())).toThrow(DATA_HASH_KEY_REQUIRED);
  });

  it('refuses a key shorter than 32 characters', () => {
    expect(() => validateEnvironment({ DATA_HASH_KEY: 'short' })).toThrow(/DATA_HASH_KEY must be at least 32 characters/);
  });

  it('outside production, generates a key on first start, stores it privately and reads the same one back', () => {
    const path = file();
    const first = resolveDataHashKey(undefined, 'development', path);
    expect(first.toString()).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync(path, 'utf8').trim()).toBe(first.toString());
    expect(statSync(path).mode & 0o077).toBe(0);
    expect(resolveDataHashKey(undefined, 'test', path).equals(first)).toBe(true);
  });
});
