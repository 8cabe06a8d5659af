import { LRUCache } from 'lru-cache';

/** What `fetch` answers for a read lru-cache discarded (its key deleted or evicted while it ran). */
const DISCARDED = Symbol('discarded');

interface Stamped<V> {
  value: V;
  /** performance.now() before the read that gave the value started: its age counts from there. */
  readAt: number;
}

export interface RefreshAheadOptions<V> {
  /** Most keys kept (least recently used go first). */
  max: number;
  /** No value older than this is answered: past it, a call waits for a new read. */
  maxAgeMs: number;
  /** From this age on, a call is answered from the cache and a new read starts behind it. */
  refreshAfterMs: number;
  /** Reads the value of a key (undefined: none, and nothing is kept). */
  load: (key: string) => Promise<V | undefined>;
}

/**
 * A per-key cache of values read from the database, for the request path. No answer's read began more
 * than `maxAgeMs` before the call asked, the same bound as a plain TTL cache. The difference is when
 * the reads happen. A plain TTL cache makes every call that arrives while its entry is being read again
 * wait for that read: once per `maxAgeMs` per key, the calls of those milliseconds pay a database round
 * trip, about 1% of the calls of a busy key (issue 26). Here a value older than `refreshAfterMs` is still
 * answered while one read, shared by every caller, replaces it. A call waits only for a key it has never
 * seen, or one whose value has grown too old because its refreshes failed or were not due.
 *
 * `delete` drops the value and discards any read in flight. lru-cache ignores a fetch whose key was
 * deleted meanwhile, so a read that began before a change committed cannot bring the old value back.
 * The calls that were waiting for that read read again. A failed refresh leaves the value in place, to
 * be answered until `maxAgeMs`. After that a call's own read, and its error, are the caller's.
 */
export class RefreshAheadCache<V extends object> {
  private readonly cache: LRUCache<string, Stamped<V>>;
  private readonly maxAgeMs: number;
  private readonly load: (key: string) => Promise<V | undefined>;
  /** The reasons lru-cache gave the reads it discarded (a delete, an eviction): what their waiting callers are rejected with. */
  private readonly discardReasons = new WeakSet<object>();

  constructor({ max, maxAgeMs, refreshAfterMs, load }: RefreshAheadOptions<V>) {
    if (!(refreshAfterMs > 0 && refreshAfterMs <= maxAgeMs)) throw new Error(`refreshAfterMs ${refreshAfterMs} must be in (0, maxAgeMs ${maxAgeMs}]`);
    this.maxAgeMs = maxAgeMs;
    this.load = load;
    this.cache = new LRUCache<string, Stamped<V>>({
      max,
      // lru-cache's "stale" is our "due for a refresh": answered (allowStale) while fetchMethod runs once behind it.
      ttl: refreshAfterMs,
      allowStale: true,
      noDeleteOnStaleGet: true,
      // A failed refresh keeps the value (answered until maxAgeMs, see get) rather than dropping it.
      noDeleteOnFetchRejection: true,
      fetchMethod: async (key, _stale, { signal }) => {
        signal.addEventListener('abort', () => {
          if (typeof signal.reason === 'object' && signal.reason !== null) this.discardReasons.add(signal.reason as object);
        });
        const readAt = performance.now();
        const value = await load(key);
        return value === undefined ? undefined : { value, readAt };
      },
    });
  }

  async get(key: string): Promise<V | undefined> {
    const oldest = performance.now() - this.maxAgeMs;
    const kept = await this.fetch(key, {});
    if (kept === undefined) return undefined; // the key has no value
    if (kept !== DISCARDED && kept.readAt >= oldest) return kept.value;
    // Too old (its refreshes failed, or none was due in time), or its read was discarded by a delete:
    // a new read, shared by the calls that ask meanwhile. lru-cache hands a read already in flight
    // instead, which may itself have begun too long ago: then a read of this call's own.
    const read = await this.fetch(key, { forceRefresh: true, allowStale: false });
    if (read === undefined) return undefined;
    if (read !== DISCARDED && read.readAt >= oldest) return read.value;
    return this.load(key);
  }

  delete(key: string): void {
    this.cache.delete(key);
  }

  /** lru-cache's fetch, with a read it discarded answered as DISCARDED; any other error is the caller's. */
  private async fetch(key: string, options: LRUCache.FetchOptions<string, Stamped<V>, unknown>): Promise<Stamped<V> | typeof DISCARDED | undefined> {
    try {
      return await this.cache.fetch(key, options);
    } catch (error) {
      if (typeof error === 'object' && error !== null && this.discardReasons.has(error)) return DISCARDED;
      throw error;
    }
  }
}
