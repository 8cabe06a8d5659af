import { Logger } from '@nestjs/common';
import { shutdownStepsRunning } from '../common/shutdown-steps';
import { withTimeout } from '../common/timeout';

/** Of SHUTDOWN_TIMEOUT_MS, the part kept for closing workers, pools and the embedded database after the drain. */
const CLOSING_SHARE = 0.4;
const MAX_CLOSING_RESERVE_MS = 5000;
/** How long the embedded PostgreSQL gets after a second signal (its fast shutdown takes well under this). */
const FORCED_STOP_MS = 1000;
/** Of SHUTDOWN_TIMEOUT_MS, what is always kept for stopping the embedded PostgreSQL, last. */
const DATABASE_SHARE = 0.25;

export interface ShutdownPlan {
  timeoutMs: number;
  requestsInFlight: () => number;
  /** Stops accepting connections and waits for running requests; resolves with the number cut off. */
  drain: (budgetMs: number) => Promise<number>;
  /** After requests were cut off: gives back the charges of the calls among them, while the database is open. */
  refundCutOff: () => Promise<unknown>;
  /** Waits for the start-up to end: a start-up is never cut in half. */
  started: () => Promise<void>;
  /** Flushes settles, stops workers, closes Redis and every database pool. */
  closeApp: () => Promise<void>;
  /** Last: the embedded PostgreSQL, once nothing is connected to it (killed after `timeoutMs`). */
  stopDatabase: (timeoutMs: number) => Promise<void>;
  exit: (code: number) => void;
}

/**
 * SIGTERM, SIGINT and SIGHUP (the terminal closed) alike: drain requests, close the application, then stop the embedded database,
 * all within SHUTDOWN_TIMEOUT_MS. Whatever does not answer in time (a database, Redis or queue that is
 * gone) is given up on and named in the log, and the exit code is 1.
 *
 * Signals repeat without anyone insisting: a closing terminal sends SIGHUP twice (the shell, then the
 * kernel), and one Ctrl-C under `npm start` arrives twice (the terminal signals the whole foreground job,
 * and npm forwards it). So a repeated signal does not cut the shutdown short: SIGHUP never does (nobody is
 * left at a closed terminal), and only the STOP_NOW_AFTER-th SIGINT or SIGTERM stops at once (Ctrl-C
 * pressed a second time under npm, a third time without it). SHUTDOWN_TIMEOUT_MS bounds everything anyway.
 */
export function installShutdown(plan: ShutdownPlan, logger = new Logger('Shutdown')): void {
  let stopping = false;
  let insisting = 0;
  const shutdown = async (signal: ShutdownSignal): Promise<void> => {
    if (signal !== 'SIGHUP') insisting++;
    if (stopping) {
      if (insisting < STOP_NOW_AFTER) {
        logger.warn(`${signal} again: the shutdown goes on (the ${ordinal(STOP_NOW_AFTER)} SIGINT or SIGTERM stops at once)`);
        return;
      }
      logger.warn(`${signal} again: stopping now, without waiting for the rest`);
      return plan.stopDatabase(FORCED_STOP_MS).finally(() => plan.exit(1));
    }
    stopping = true;
    const deadline = Date.now() + plan.timeoutMs;
    // The embedded database always keeps its share: the whole shutdown stays inside SHUTDOWN_TIMEOUT_MS.
    const databaseReserve = Math.min(FORCED_STOP_MS, Math.round(plan.timeoutMs * DATABASE_SHARE));
    const left = () => Math.max(0, deadline - Date.now());
    const leftBeforeDatabase = () => Math.max(0, left() - databaseReserve);
    const giveUp = (step: string) => () => new Error(`${step} did not end within SHUTDOWN_TIMEOUT_MS (${plan.timeoutMs} ms)`);
    let clean = true;
    try {
      await withTimeout(plan.started(), leftBeforeDatabase(), giveUp('the start-up'));
      const reserve = Math.min(MAX_CLOSING_RESERVE_MS, Math.round(plan.timeoutMs * CLOSING_SHARE));
      const drainBudget = Math.max(0, leftBeforeDatabase() - reserve);
      logger.log(`${signal}: shutting down; ${plan.requestsInFlight()} request(s) in flight get up to ${drainBudget} ms`);
      const abandoned = await plan.drain(drainBudget);
      if (abandoned > 0) {
        logger.warn(`${abandoned} request(s) still running after ${drainBudget} ms were cut off`);
        // Their charges now, not at the sweep after the bound (on one instance: its next start).
        await withTimeout(plan.refundCutOff(), leftBeforeDatabase(), giveUp('the refund of the calls cut off'));
      }
      await withTimeout(plan.closeApp(), leftBeforeDatabase(), () => {
        const busy = shutdownStepsRunning();
        return new Error(`gave up on ${busy.length > 0 ? busy.join(', ') : 'the database connections'} after ${plan.timeoutMs} ms`);
      });
    } catch (error) {
      clean = false;
      logger.error(`Shutdown: ${(error as Error).message}`);
    }
    try {
      await plan.stopDatabase(Math.max(1, left()));
    } catch (error) {
      clean = false;
      logger.error(`Shutdown: the embedded PostgreSQL did not stop cleanly: ${(error as Error).message}`);
    }
    logger.log(clean ? 'Stopped' : 'Stopped, with the problems above');
    plan.exit(clean ? 0 : 1);
  };
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, () => void shutdown(signal));
  // After a SIGHUP the terminal is gone: writing to it fails (EIO, EPIPE), which must not end the shutdown.
  process.once('SIGHUP', () => {
    for (const stream of [process.stdout, process.stderr]) stream.on('error', () => undefined);
  });
}

/** Each starts the same orderly shutdown; SIGHUP is a closed terminal (its default would skip every step). */
export const SHUTDOWN_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
type ShutdownSignal = (typeof SHUTDOWN_SIGNALS)[number];

/** The SIGINT or SIGTERM that stops a running shutdown at once, counting the one that started it. */
export const STOP_NOW_AFTER = 3;

function ordinal(n: number): string {
  return ['first', 'second', 'third', 'fourth'][n - 1] ?? `${n}th`;
}
