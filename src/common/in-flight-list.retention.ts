/**
 * Run by in-flight-list.spec.ts in a process of its own (a heap no other test has shaped): prints the
 * change of the heap's used bytes over ITEMS items added to a structure of in-flight calls, overlapping
 * three at a time like concurrent requests, and removed again, once the structure has been through a
 * major GC; read after two scavenges. Nothing refers to the items any more: what remains beyond the
 * `none` case (the same churn, nothing tracked) is garbage the scavenger could not see as such, promoted
 * to the old generation. The major GC is a plain `gc()`: Node 20 runs `gc({ type: 'major' })` as a
 * scavenge, which left the structure young and ts-node's start-up garbage on the heap for a later
 * mark-compact to free in the middle of some runs (readings then moved by 10 MB, and a Set looked harmless
 * on Node 20). Run with a single-threaded GC (no concurrent sweeping, whose progress moved the readings by
 * several MB) and a young generation of a fixed size: a Set then keeps 60% of the items on Node 20 and 24,
 * the list and HttpDrain under 1%.
 * `node --expose-gc --single-threaded-gc --min-semi-space-size=16 --max-semi-space-size=16
 *   -r ts-node/register/transpile-only in-flight-list.retention.ts <case>`.
 */
import { EventEmitter } from 'node:events';
import type { Server, ServerResponse } from 'node:http';
import { getHeapSpaceStatistics, getHeapStatistics } from 'node:v8';
import { HttpDrain } from './http-drain';
import { InFlightList } from './in-flight-list';

type Remove = () => void;
type Track = (item: object) => Remove;

const ITEMS = 400;
/** 2,000 small objects per item (~80 KB on a 64-bit Node without pointer compression): a request's worth. */
const payload = () => Array.from({ length: 2000 }, (_, index) => ({ index }));

const gc = (globalThis as { gc?: (options?: { type: 'minor'; execution: 'sync' }) => void }).gc!;

/** Bytes in use in the young generation. */
const young = () => getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')!.space_used_size;

function leftAfterChurn(track: Track): number {
  track({})();
  gc(); // a full, synchronous mark-compact on every version
  if (young() > 64 * 1024) throw new Error(`the major GC left ${young()} bytes in the young generation: the measure would not start from an empty one`);
  const before = getHeapStatistics().used_heap_size;
  const window: Remove[] = [];
  for (let i = 0; i < ITEMS; i++) {
    window.push(track(payload()));
    if (window.length > 3) window.shift()!();
  }
  for (const remove of window.splice(0)) remove();
  gc({ type: 'minor', execution: 'sync' });
  gc({ type: 'minor', execution: 'sync' });
  return getHeapStatistics().used_heap_size - before;
}

const cases: Record<string, () => Track> = {
  /** The baseline: the same churn, nothing tracked (what the heap does on its own between the two readings). */
  none: () => () => () => undefined,
  /** The measure itself: items still referenced are counted. */
  kept: () => {
    const kept: object[] = [];
    return (item) => {
      kept.push(item);
      return () => undefined;
    };
  },
  /** What HttpDrain held before: a Set of the in-flight items. */
  set: () => {
    const set = new Set<object>();
    return (item) => {
      set.add(item);
      return () => void set.delete(item);
    };
  },
  list: () => {
    const list = new InFlightList<object>();
    return (item) => list.add(item);
  },
  drain: () => {
    const server = new EventEmitter();
    new HttpDrain(server as unknown as Server);
    return (body) => {
      const res = Object.assign(new EventEmitter(), { body, setHeader: () => undefined });
      server.emit('request', {}, res as unknown as ServerResponse);
      return () => res.emit('close');
    };
  },
};

if (require.main === module) {
  const make = cases[process.argv[2]];
  if (!make) throw new Error(`unknown case ${process.argv[2]}: ${Object.keys(cases).join(', ')}`);
  process.stdout.write(`${JSON.stringify({ left: leftAfterChurn(make()) })}\n`);
}
