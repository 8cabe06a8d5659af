/** The keys of the lookup cache: what LookupService reads and writes, and what an erasure deletes (LookupCacheEraser). */

/**
 * Bump when the shape of a cached answer or of its key changes, so old entries are ignored rather than
 * misread. v4: a check's full record (fields, provider, time) under a keyed hash of the number
 * (docs/privacy.md); v3 keys were keyed hashes holding the older per-check answers; v2 keys held the
 * number in clear.
 */
const CACHE_KEY_VERSION = 'v4';
/** Earlier keyed-hash keys (older answer shape): never read, only erasure still looks for them (they expire at their TTL). */
export const PREVIOUS_KEYED_CACHE_KEY_VERSION = 'v3';
/** The version before keys were hashed: only erasure still looks for it (its entries expire at their TTL). */
export const PLAIN_CACHE_KEY_VERSION = 'v2';

/** How long an erasure's mark is held: one lifetime for the lookup cache and the risk counters. */
export { ERASURE_MARK_SECONDS } from '../../erasures/erasure-mark';

/** The mark of an erasure of the number (keyed hash, never the number). */
export function erasedKey(numberHash: string): string {
  return `erased:${numberHash}`;
}

/** A check's cache key: its version, the check and the keyed hash of the number (never the number). */
export function cacheKey(check: string, numberHash: string): string {
  return `${CACHE_KEY_VERSION}:${check}:${numberHash}`;
}
