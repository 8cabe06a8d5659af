/**
 * Preloaded (`node -r`) into a server by the fixed-rate benchmark: an event-loop delay histogram
 * (perf_hooks.monitorEventLoopDelay, 1 ms resolution) and the heap's figures from v8.GCProfiler (every
 * GC between two signals, with the heap's spaces before and after it). On SIGUSR2 it writes the figures
 * since the previous signal to BENCH_LOOP_DELAY_FILE (JSON, milliseconds and bytes) and starts anew.
 *
 * BENCH_HEAP_SAMPLING_FILE set as well: between two signals the sampling heap profiler also runs, keeping
 * the samples of objects a major GC collected but not those a scavenge collected: the objects that lived
 * long enough to be promoted (and the live ones). Written as a .heapprofile (Chrome DevTools), for finding
 * what a call leaves behind for a major GC. Not in the service.
 */
import { writeFileSync } from 'node:fs';
import { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Session } from 'node:inspector';
import { createHistogram, monitorEventLoopDelay } from 'node:perf_hooks';
import { GCProfiler, getHeapStatistics } from 'node:v8';

export interface LoopDelay {
  p50: number;
  p90: number;
  p99: number;
  p99_9: number;
  max: number;
  heap?: HeapFigures;
  /** Milliseconds each request spent in the server, from its headers parsed to its response handed to the socket. */
  server?: { p50: number; p99: number; p99_9: number; max: number };
}

export interface HeapFigures {
  /** Bytes allocated on the JavaScript heap (every space) over the period. */
  allocated: number;
  /** Bytes scavenges moved from the young generation to the old one: garbage only a major GC takes back, or live. */
  promoted: number;
  /** Bytes allocated straight in the old generation (pretenured allocation sites, large objects). */
  allocatedOld: number;
  scavenges: number;
  majorGcs: number;
  /** Milliseconds: the longest scavenge and major GC (their main-thread cost, V8's figure). */
  scavengeMax: number;
  majorMax: number;
  /** Milliseconds spent in GC in all. */
  gcTotal: number;
}

interface SpaceStatistics {
  spaceName: string;
  spaceUsedSize: number;
}

interface HeapState {
  heapStatistics: { usedHeapSize: number };
  heapSpaceStatistics: SpaceStatistics[];
}

interface GcEntry {
  gcType: string;
  /** Microseconds. */
  cost: number;
  beforeGC: HeapState;
  afterGC: HeapState;
}

const YOUNG = new Set(['new_space', 'new_large_object_space']);
const young = (state: HeapState) => state.heapSpaceStatistics.filter((s) => YOUNG.has(s.spaceName)).reduce((sum, s) => sum + s.spaceUsedSize, 0);
const old = (state: HeapState) => state.heapStatistics.usedHeapSize - young(state);

/** The period's figures from its GCs: what was allocated between them, and what each scavenge promoted. */
export function heapFigures(entries: GcEntry[], usedAtStart: number, usedAtEnd: number): HeapFigures {
  let allocated = 0;
  let previousUsed = usedAtStart;
  let previousOld: number | undefined;
  const figures: HeapFigures = { allocated: 0, promoted: 0, allocatedOld: 0, scavenges: 0, majorGcs: 0, scavengeMax: 0, majorMax: 0, gcTotal: 0 };
  for (const gc of entries) {
    allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - previousUsed);
    previousUsed = gc.afterGC.heapStatistics.usedHeapSize;
    if (previousOld !== undefined) figures.allocatedOld += Math.max(0, old(gc.beforeGC) - previousOld);
    previousOld = old(gc.afterGC);
    const ms = gc.cost / 1000;
    figures.gcTotal += ms;
    if (gc.gcType === 'Scavenge' || gc.gcType === 'MinorMarkSweep') {
      figures.scavenges++;
      figures.scavengeMax = Math.max(figures.scavengeMax, ms);
      figures.promoted += Math.max(0, old(gc.afterGC) - old(gc.beforeGC));
    } else if (gc.gcType === 'MarkSweepCompact') {
      figures.majorGcs++;
      figures.majorMax = Math.max(figures.majorMax, ms);
    }
  }
  allocated += Math.max(0, usedAtEnd - previousUsed);
  return { ...figures, allocated, gcTotal: Math.round(figures.gcTotal * 100) / 100 };
}

const file = process.env.BENCH_LOOP_DELAY_FILE;
if (file) {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  // The time in the server alone: the client's latency also holds the wait before the loop reads a
  // request and the load generator's own, which this separates out.
  const inServer = createHistogram();
  const emit = Server.prototype.emit;
  Server.prototype.emit = function (this: Server, event: string, ...args: unknown[]): boolean {
    if (event === 'request') {
      const started = process.hrtime.bigint();
      (args[1] as ServerResponse<IncomingMessage>).once('finish', () => inServer.record(Number(process.hrtime.bigint() - started) || 1));
    }
    return emit.apply(this, [event, ...args] as Parameters<typeof emit>);
  } as typeof Server.prototype.emit;
  let profiler = new GCProfiler();
  let usedAtStart = getHeapStatistics().used_heap_size;
  profiler.start();
  const sampling = process.env.BENCH_HEAP_SAMPLING_FILE ? new Session() : undefined;
  let periods = 0;
  if (sampling) {
    sampling.connect();
    sampling.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false });
  }
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  process.on('SIGUSR2', () => {
    const entries = (profiler.stop()?.statistics ?? []) as unknown as GcEntry[];
    const usedAtEnd = getHeapStatistics().used_heap_size;
    const figures: LoopDelay = {
      p50: ms(histogram.percentile(50)),
      p90: ms(histogram.percentile(90)),
      p99: ms(histogram.percentile(99)),
      p99_9: ms(histogram.percentile(99.9)),
      max: ms(histogram.max),
      heap: heapFigures(entries, usedAtStart, usedAtEnd),
      server: inServer.count > 0 ? { p50: ms(inServer.percentile(50)), p99: ms(inServer.percentile(99)), p99_9: ms(inServer.percentile(99.9)), max: ms(inServer.max) } : undefined,
    };
    writeFileSync(file, JSON.stringify(figures));
    histogram.reset();
    inServer.reset();
    profiler = new GCProfiler();
    usedAtStart = getHeapStatistics().used_heap_size;
    profiler.start();
    if (sampling) {
      const period = ++periods;
      sampling.post('HeapProfiler.stopSampling', (error, result) => {
        if (!error) writeFileSync(`${process.env.BENCH_HEAP_SAMPLING_FILE}.${period}.heapprofile`, JSON.stringify(result.profile));
        sampling.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: false });
      });
    }
  });
}
