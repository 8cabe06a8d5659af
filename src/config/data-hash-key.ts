import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigurationError, DATA_HASH_KEY_REQUIRED } from './environment';

/** Where a key generated on first start is kept (the embedded set-up's data folder, never committed). */
export const GENERATED_KEY_FILE = join('.data', 'data-hash-key');

/**
 * The key of every keyed hash of personal data (DATA_HASH_KEY, docs/privacy.md). Set: used as it is.
 * Unset in production: refused, in one line (a key generated per host would make each instance hash
 * differently, and a lost one silently forgets every cached answer and in-flight Idempotency-Key).
 * Unset elsewhere (the embedded set-up, development, tests): generated once and stored in
 * `.data/data-hash-key`, read back by every later start and by the other processes of this checkout.
 */
export function resolveDataHashKey(configured: string | undefined, environment: string, file = GENERATED_KEY_FILE): Buffer {
  if (configured) return Buffer.from(configured, 'utf8');
  if (environment === 'production') {
    throw new ConfigurationError(DATA_HASH_KEY_REQUIRED);
  }
  return Buffer.from(readOrCreate(file), 'utf8');
}

function readOrCreate(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dirname(file), { recursive: true });
  // Written whole under another name, then linked: of two processes starting together, one key wins
  // and the other reads it complete (a link is atomic and fails on an existing name).
  const draft = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(draft, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  try {
    linkSync(draft, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    unlinkSync(draft);
  }
  return readFileSync(file, 'utf8').trim();
}
