import { BeforeApplicationShutdown, Injectable, Logger } from '@nestjs/common';
import { Clock, ClockTimer } from './clock';

/** A background job: what it is called, and how often its step runs. */
export interface JobOptions {
  /** Names the job in its log lines, and for a test that runs it (test/helpers/manual-clock.ts). */
  name: string;
  /** From the end of one round to the start of the next, in ms of the Clock. */
  everyMs: number;
  /** Until the first round; default `everyMs`. */
  firstAfterMs?: number;
}

/** A job the scheduler runs: `wake` runs a round as soon as none is running, instead of at the next tick. */
export interface ScheduledJob {
  wake(): void;
}

/**
 * Loops are steps (docs/development.md): a background job is a method that does one round of work and
 * returns what it did (the sweep, the outbox delivery, the retention run, the lease look, the watchlist
 * poll); the Scheduler only calls it, one round at a time, on the injected Clock. A failed round is logged
 * and the next one goes on. Tests replace the Scheduler (test/helpers/manual-clock.ts) and call the steps
 * themselves; nothing runs behind their back.
 */
export abstract class Scheduler {
  abstract every(options: JobOptions, step: () => Promise<unknown>): ScheduledJob;
  /** Stops every job; resolves when their running rounds have ended. */
  abstract stop(): Promise<void>;
}

/** Runs each job's rounds on the Clock's timers, until the application shuts down. */
@Injectable()
export class ClockScheduler extends Scheduler implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Scheduler');
  private readonly jobs = new Set<ClockJob>();
  private stopped = false;

  constructor(private readonly clock: Clock) {
    super();
  }

  every(options: JobOptions, step: () => Promise<unknown>): ScheduledJob {
    const job = new ClockJob(this.clock, options, step, this.logger);
    if (!this.stopped) {
      this.jobs.add(job);
      job.start();
    }
    return job;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.jobs].map((job) => job.stop()));
  }

  beforeApplicationShutdown(): Promise<void> {
    return this.stop();
  }
}

class ClockJob implements ScheduledJob {
  private timer: ClockTimer | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;

  constructor(
    private readonly clock: Clock,
    private readonly options: JobOptions,
    private readonly step: () => Promise<unknown>,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.schedule(this.options.firstAfterMs ?? this.options.everyMs);
  }

  wake(): void {
    if (this.stopped || this.running) return;
    this.timer?.cancel();
    this.round();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    await this.running;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = this.clock.timer(delayMs, () => this.round());
  }

  private round(): void {
    this.timer = undefined;
    this.running = this.step()
      .then(
        () => undefined,
        (error: Error) => this.logger.warn(`${this.options.name}: this round failed (the next one goes on): ${error.message}`),
      )
      .finally(() => {
        this.running = undefined;
        this.schedule(this.options.everyMs);
      });
  }
}
