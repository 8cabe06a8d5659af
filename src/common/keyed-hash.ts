import { createHash, createHmac, type KeyObject } from 'node:crypto';

/**
 * A hashing key: the service passes AppConfig.dataHashKey, a KeyObject made once at start-up. Given a
 * Buffer, Node 24's createHmac first checks whether it is a KeyObject or a CryptoKey, which costs 11-13 µs
 * a call there against 2 µs with a KeyObject (Node 20: 1.8 µs either way), and a cache-hit /filter hashes
 * its number on every call (docs/architecture.md, "What a call may leave behind"). Buffers are for tests and tools.
 */
export type HashKey = KeyObject | Buffer;

/**
 * HMAC-SHA-256 of `value` under the server's DATA_HASH_KEY (docs/privacy.md): what the service keeps
 * instead of a phone number where it only needs to recognise one again (cache keys, Idempotency-Key
 * request hashes, the erasure audit row). Without the key, a masked number's 10⁴ candidates cannot be
 * tried against it. Hex, 64 characters.
 */
export function keyedHash(key: HashKey, value: string): string {
  return createHmac('sha256', key).update(value, 'utf8').digest('hex');
}

/** A request body's keyed hash, and whether a stored hash is of the same body. */
export interface RequestHash {
  keyed: string;
  matches(stored: string): boolean;
}

/**
 * What identifies a request's body (Idempotency-Key retries) without keeping it: its keyed hash. An
 * unkeyed hash of a body holding a phone number falls to 10⁴ guesses from the masked number. A stored
 * hash also matches when it is the unkeyed SHA-256 stored before the upgrade (so keys of that time keep
 * working); that one is computed only for such a stored hash, and never written.
 */
export function requestHash(request: unknown, key: HashKey): RequestHash {
  const text = JSON.stringify(request);
  const keyed = keyedHash(key, text);
  return { keyed, matches: (stored) => stored === keyed || stored === createHash('sha256').update(text).digest('hex') };
}
