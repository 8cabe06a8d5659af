import { setTimeout as sleepFor } from 'node:timers/promises';

/** A timer set on a Clock: cancel it to stop it from firing (cancelling a fired one does nothing). */
export interface ClockTimer {
  cancel(): void;
}

/**
 * Time, as a port (docs/development.md, "Tests that need time to pass"). Every rule about time asks
 * the injected Clock (the time now, a wait, a timer) instead of `Date.now()` or a global timer, so
 * that a test moves time instead of waiting for it: production runs on SystemClock, tests on
 * test/helpers/manual-clock.ts. Rules evaluated in SQL get the time as a parameter from here too
 * (leases, sweeps, expiries, retention, the day of a spending limit), so one clock decides them all.
 * Not for measuring how long something took (process.hrtime for metrics and logs), nor for the
 * deadlines of a socket or a statement, which belong to the driver.
 */
export abstract class Clock {
  /** Milliseconds since the epoch. */
  abstract now(): number;

  /** Resolves after `ms` of this clock's time; rejects with the signal's reason when it is aborted first. */
  abstract sleep(ms: number, signal?: AbortSignal): Promise<void>;

  /** Calls `fire` once, after `ms` of this clock's time. Never keeps the process alive on its own. */
  abstract timer(ms: number, fire: () => void): ClockTimer;

  /** The time now, as a Date. */
  date(): Date {
    return new Date(this.now());
  }

  /** The time `ms` from now, as a Date (a deadline or an expiry to write). */
  inMs(ms: number): Date {
    return new Date(this.now() + ms);
  }
}

/** The machine's time and Node's timers. */
export class SystemClock extends Clock {
  now(): number {
    return Date.now();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepFor(ms, undefined, { signal });
  }

  timer(ms: number, fire: () => void): ClockTimer {
    const handle = setTimeout(fire, ms);
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  }
}

const HOUR_MS = 3_600_000;

/** The time `hours` before `at` (a cut-off of a period counted back from the Clock's now). */
export function hoursBefore(at: Date, hours: number): Date {
  return new Date(at.getTime() - hours * HOUR_MS);
}

/** The time `days` (of 24 hours) before `at`: a retention period's cut-off. */
export function daysBefore(at: Date, days: number): Date {
  return hoursBefore(at, days * 24);
}
