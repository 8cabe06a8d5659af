/**
 * Preloaded (`node -r`) into a server by the fixed-rate benchmark: an event-loop delay histogram
 * (perf_hooks.monitorEventLoopDelay, 1 ms resolution). On SIGUSR2 it writes the histogram since the
 * previous signal to BENCH_LOOP_DELAY_FILE (JSON, milliseconds) and starts a new one. Not in the service.
 */
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface LoopDelay {
  p50: number;
  p90: number;
  p99: number;
  p99_9: number;
  max: number;
}

const file = process.env.BENCH_LOOP_DELAY_FILE;
if (file) {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const ms = (ns: number) => Math.round(ns / 1e4) / 100;
  process.on('SIGUSR2', () => {
    const figures: LoopDelay = {
      p50: ms(histogram.percentile(50)),
      p90: ms(histogram.percentile(90)),
      p99: ms(histogram.percentile(99)),
      p99_9: ms(histogram.percentile(99.9)),
      max: ms(histogram.max),
    };
    writeFileSync(file, JSON.stringify(figures));
    histogram.reset();
  });
}
