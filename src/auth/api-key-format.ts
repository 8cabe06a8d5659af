import { createHash, randomInt } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_PREFIX = 'pf_live_';
const SECRET_LENGTH = 32;
/** What is stored and shown to identify a key: the fixed prefix and the first 4 secret characters. */
const DISPLAY_PREFIX_LENGTH = KEY_PREFIX.length + 4;
const KEY_SHAPE = /^pf_live_[0-9A-Za-z]{32,128}$/;

/** A new key: `pf_live_` + 32 base62 characters from the CSPRNG (about 190 bits). */
export function generateApiKey(): string {
  let secret = '';
  for (let i = 0; i < SECRET_LENGTH; i++) secret += ALPHABET[randomInt(ALPHABET.length)];
  return KEY_PREFIX + secret;
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

export function displayPrefix(key: string): string {
  return key.slice(0, DISPLAY_PREFIX_LENGTH);
}

export function looksLikeApiKey(candidate: string): boolean {
  return KEY_SHAPE.test(candidate);
}

/** `Bearer <key>` (scheme case-insensitive, as RFC 7235 says); anything else is undefined. */
export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(header ?? '');
  return match?.[1];
}
