/** A value a batch fills in when it runs (`CounterBatch.exec`). */
export interface Later<T> {
  value: T;
}

/**
 * One round trip's worth of counter operations: queued, then run together by `exec` (one Redis
 * script call, or at once in memory). Values read are filled in once `exec` resolves. Sorted sets hold a
 * member (a keyed hash) with its time as the score; every key lives `ttlMs` past its last write.
 */
export interface CounterBatch {
  /** Adds `member` at `score` (a time; moves it if present), drops members older than `score - ttlMs`, keeps the key `ttlMs`. */
  remember(key: string, member: string, score: number, ttlMs: number): void;
  /** Members whose score is after `after` and at most `upTo`: a window (now − its length, now] counts nothing of its first instant. */
  count(key: string, after: number, upTo: number): Later<number>;
  /**
   * What `count` would answer had `remember(key, member, score, …)` run first, without writing it (a
   * read that records nothing): the member is counted at `score` instead of where it is.
   */
  countAsIf(key: string, member: string, score: number, after: number, upTo: number): Later<number>;
  forgetMember(key: string, member: string): void;
  setFields(key: string, fields: Record<string, string>, ttlMs: number): void;
  fields(key: string): Later<Record<string, string>>;
  increment(key: string, field: string, by: number, ttlMs: number): void;
  addMember(key: string, member: string, ttlMs: number): void;
  members(key: string): Later<string[]>;
  remove(key: string): void;
  /** Sets `key` (an erasure's mark), kept `ttlMs`. */
  mark(key: string, ttlMs: number): void;
  /** Writes that are skipped, when the batch runs them, if the mark `key` is set (an erased number's own members). */
  unlessMarked(key: string): CounterWrites;
  exec(): Promise<void>;
}

/** The writes of a number's own members and records, which an erasure's mark stops. */
export type CounterWrites = Pick<CounterBatch, 'remember' | 'setFields' | 'addMember'>;

/** Where the risk counters live: Redis (shared by every instance) or this process's memory. */
export abstract class CounterStore {
  abstract readonly kind: 'memory' | 'redis';
  abstract batch(): CounterBatch;
}

/** The counters could not be read or written: no verdict (the call is refunded). */
export class CountersUnavailable extends Error {}
