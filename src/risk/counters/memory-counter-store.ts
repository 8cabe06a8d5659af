import { LRUCache } from 'lru-cache';
import type { Clock } from '../../common/clock';
import { CounterBatch, CounterStore, CounterWrites, Later } from './counter-store';

interface Entry {
  expiresAt: number;
  scores?: Map<string, number>;
  hash?: Map<string, string>;
  set?: Set<string>;
}

/**
 * The counters in this process (no REDIS_URL): one instance sees only its own calls, and a restart
 * forgets them. Keys expire by the Clock's time (a test moves it); at most `maxKeys` are kept, the
 * least recently used going first.
 */
export class MemoryCounterStore extends CounterStore {
  readonly kind = 'memory';
  private readonly entries: LRUCache<string, Entry>;

  constructor(
    private readonly clock: Clock,
    maxKeys = 500_000,
  ) {
    super();
    this.entries = new LRUCache<string, Entry>({ max: maxKeys });
  }

  batch(): CounterBatch {
    return new MemoryBatch(this);
  }

  /** The live entry of a key (an expired one is dropped); `create`: made when missing. */
  entry(key: string, create: boolean): Entry | undefined {
    const now = this.clock.now();
    let entry = this.entries.get(key);
    if (entry && entry.expiresAt <= now) {
      this.entries.delete(key);
      entry = undefined;
    }
    if (!entry && create) {
      entry = { expiresAt: now };
      this.entries.set(key, entry);
    }
    return entry;
  }

  keep(entry: Entry, ttlMs: number): void {
    entry.expiresAt = this.clock.now() + ttlMs;
  }

  remove(key: string): void {
    this.entries.delete(key);
  }
}

/** Runs each operation as it is queued: `exec` has nothing left to do. */
class MemoryBatch implements CounterBatch {
  constructor(private readonly store: MemoryCounterStore) {}

  remember(key: string, member: string, score: number, ttlMs: number): void {
    const entry = this.store.entry(key, true)!;
    const scores = (entry.scores ??= new Map());
    scores.set(member, score);
    const oldest = score - ttlMs;
    for (const [other, at] of scores) if (at < oldest) scores.delete(other);
    this.store.keep(entry, ttlMs);
  }

  count(key: string, after: number, upTo: number): Later<number> {
    let n = 0;
    for (const at of this.store.entry(key, false)?.scores?.values() ?? []) if (at > after && at <= upTo) n++;
    return { value: n };
  }

  countAsIf(key: string, member: string, score: number, after: number, upTo: number): Later<number> {
    const inWindow = (at: number | undefined) => at !== undefined && at > after && at <= upTo;
    const scores = this.store.entry(key, false)?.scores;
    const { value } = this.count(key, after, upTo);
    return { value: value - (inWindow(scores?.get(member)) ? 1 : 0) + (inWindow(score) ? 1 : 0) };
  }

  forgetMember(key: string, member: string): void {
    this.store.entry(key, false)?.scores?.delete(member);
  }

  setFields(key: string, fields: Record<string, string>, ttlMs: number): void {
    const entry = this.store.entry(key, true)!;
    const hash = (entry.hash ??= new Map());
    for (const [field, value] of Object.entries(fields)) hash.set(field, value);
    this.store.keep(entry, ttlMs);
  }

  fields(key: string): Later<Record<string, string>> {
    return { value: Object.fromEntries(this.store.entry(key, false)?.hash ?? []) };
  }

  increment(key: string, field: string, by: number, ttlMs: number): void {
    const entry = this.store.entry(key, true)!;
    const hash = (entry.hash ??= new Map());
    hash.set(field, String(Number(hash.get(field) ?? 0) + by));
    this.store.keep(entry, ttlMs);
  }

  addMember(key: string, member: string, ttlMs: number): void {
    const entry = this.store.entry(key, true)!;
    (entry.set ??= new Set()).add(member);
    this.store.keep(entry, ttlMs);
  }

  members(key: string): Later<string[]> {
    return { value: [...(this.store.entry(key, false)?.set ?? [])] };
  }

  remove(key: string): void {
    this.store.remove(key);
  }

  mark(key: string, ttlMs: number): void {
    this.store.keep(this.store.entry(key, true)!, ttlMs);
  }

  /** Asked as each write is queued, like every operation here: a mark set before it stops it. */
  unlessMarked(key: string): CounterWrites {
    const marked = () => this.store.entry(key, false) !== undefined;
    return {
      remember: (...args) => void (marked() || this.remember(...args)),
      setFields: (...args) => void (marked() || this.setFields(...args)),
      addMember: (...args) => void (marked() || this.addMember(...args)),
    };
  }

  async exec(): Promise<void> {}
}
