import { Clock, ClockTimer } from '../../src/common/clock';
import { JobOptions, ScheduledJob, Scheduler } from '../../src/common/scheduler';

interface PendingTimer {
  at: number;
  order: number;
  fire: () => void;
}

/** Lets the promise callbacks and I/O callbacks queued so far run (one turn of the event loop). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * A Clock that moves only when the test moves it (docs/development.md, "Tests that need time to pass").
 * `advance(ms)` fires, in order, every timer and sleep that falls due, each at its own time; nothing
 * else ever fires. It starts at the machine's time, so that rows the database stamps with its own
 * now() and times read from this clock stay comparable; it only moves forward.
 */
export class ManualClock extends Clock {
  private current: number;
  private pending: PendingTimer[] = [];
  private order = 0;

  constructor(start: number = Date.now()) {
    super();
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  timer(ms: number, fire: () => void): ClockTimer {
    const entry: PendingTimer = { at: this.current + Math.max(0, ms), order: this.order++, fire };
    this.pending.push(entry);
    return { cancel: () => (this.pending = this.pending.filter((other) => other !== entry)) };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      const onAbort = () => {
        timer.cancel();
        reject(signal!.reason as Error);
      };
      const timer = this.timer(ms, () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Moves the time forward by `ms`, firing each timer that falls due at its own time (a timer set by
   * one that fired fires too when it falls inside the move), and lets what they started run a turn.
   */
  async advance(ms: number): Promise<void> {
    const target = this.current + ms;
    for (;;) {
      const next = this.pending.filter((entry) => entry.at <= target).sort((a, b) => a.at - b.at || a.order - b.order)[0];
      if (!next) break;
      this.pending = this.pending.filter((entry) => entry !== next);
      this.current = Math.max(this.current, next.at);
      next.fire();
      await settle();
    }
    this.current = target;
    await settle();
  }

  /** Timers and sleeps waiting for the clock to move. */
  waiting(): number {
    return this.pending.length;
  }
}

interface ManualJob {
  options: JobOptions;
  step: () => Promise<unknown>;
  wakes: number;
}

/**
 * A Scheduler that never runs anything by itself: the test runs a job's step with `run(name)` and gets
 * what the round did. `wakes(name)` counts the times the code asked for a round at once.
 */
export class ManualScheduler extends Scheduler {
  private readonly jobs = new Map<string, ManualJob>();

  every(options: JobOptions, step: () => Promise<unknown>): ScheduledJob {
    const job: ManualJob = { options, step, wakes: 0 };
    this.jobs.set(options.name, job);
    return { wake: () => void (job.wakes += 1) };
  }

  /** Runs one round of the named job, as the scheduler would, and returns what it did. */
  run<T = unknown>(name: string): Promise<T> {
    return this.job(name).step() as Promise<T>;
  }

  /** How often the job is scheduled to run, in ms. */
  everyMs(name: string): number {
    return this.job(name).options.everyMs;
  }

  wakes(name: string): number {
    return this.job(name).wakes;
  }

  names(): string[] {
    return [...this.jobs.keys()].sort();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }

  private job(name: string): ManualJob {
    const job = this.jobs.get(name);
    if (!job) throw new Error(`No background job "${name}" was scheduled (scheduled: ${this.names().join(', ') || 'none'})`);
    return job;
  }
}
