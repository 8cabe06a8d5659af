import type { ManualClock } from './manual-clock';

/**
 * Lets code that pauses on the ManualClock between attempts (a retry, a poll, a give-back) go on: each
 * time something waits on the clock, moves it by `stepMs`, until `done()` holds. The work between two
 * pauses (a statement) takes real time, so the clock moves one pause at a time. Throws when `done()`
 * still does not hold after `timeoutMs` of real time (a generous deadline for a loaded machine), or
 * after `maxMs` of the clock's time.
 */
export async function advanceWhilePaused(
  clock: ManualClock,
  done: () => boolean | Promise<boolean>,
  { stepMs, maxMs = 24 * 3600_000, timeoutMs = 30_000 }: { stepMs: number; maxMs?: number; timeoutMs?: number },
): Promise<number> {
  const started = clock.now();
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`still not done after ${timeoutMs} ms (clock moved ${clock.now() - started} ms, ${clock.waiting()} waiting)`);
    if (clock.now() - started > maxMs) throw new Error(`still not done after the clock moved ${maxMs} ms`);
    if (clock.waiting() > 0) await clock.advance(stepMs);
    else await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return clock.now() - started;
}
