import { AsyncLocalStorage } from 'node:async_hooks';
import type { NextFunction, Request, Response } from 'express';
import { withTimeout } from './timeout';

/**
 * What one request has spent waiting on Redis: the time during which at least one of its operations
 * was waiting (operations in parallel, such as the cache reads of several checks, count once).
 */
class CallAllowance {
  exhausted = false;
  private waitedMs = 0;
  private pending = 0;
  private busySince = 0;

  constructor(readonly budgetMs: number) {}

  get spentMs(): number {
    return this.waitedMs + (this.pending > 0 ? performance.now() - this.busySince : 0);
  }

  get remainingMs(): number {
    return this.budgetMs - this.spentMs;
  }

  started(): void {
    if (this.pending++ === 0) this.busySince = performance.now();
  }

  ended(): void {
    if (--this.pending === 0) this.waitedMs += performance.now() - this.busySince;
  }
}

export interface RedisBudgetCounters {
  /** Operations that answered (or failed on their own) within the call's allowance. */
  answered: number;
  /** Operations whose wait the allowance ended: the call went on without their answer. */
  cutShort: number;
  /** Operations not sent at all, the call's allowance being spent already. */
  skipped: number;
  /** Operations sent for a call after it had gone on without Redis (its allowance spent): must stay 0. */
  sentAfterBudget: number;
  /** Requests that spent their whole allowance. */
  callsOverBudget: number;
  /** The longest a request has waited on Redis in all, in ms (the allowance bounds it, give or take the event loop's lag). */
  longestCallWaitMs: number;
}

class BudgetSpent extends Error {}

/**
 * What an operation rejects with when it finds, at the moment it would send its command, that the
 * request's allowance ran out while the command waited to be sent (a command coalesced for the end of
 * the event loop's turn, which a busy loop delays). `spend` counts it as skipped and goes on without it.
 */
export class AllowanceSpentBeforeSending extends Error {
  constructor() {
    super("the request's Redis allowance ran out before its command was sent (REDIS_CALL_BUDGET_MS)");
  }
}

/** A request's allowance, as an operation holds it to check later (`RedisBudget.admits`). */
export type HeldAllowance = CallAllowance | undefined;

/**
 * ONE allowance of Redis waiting per request (REDIS_CALL_BUDGET_MS), shared by everything the call asks
 * Redis (the plan limit, the cache reads, the cache write): each operation waits at most what is left of
 * it, and once it is spent the call goes on without Redis, as when Redis is down (no plan limit applied,
 * cache misses, writes dropped). Without it a hung Redis cost each command its own timeout in turn
 * (300 + 500 + 500 + 500 ms). Operations outside a request (bulk and watchlist workers) keep their
 * clients' command timeouts only. Every operation is counted (`counters`, on /metrics).
 */
export class RedisBudget {
  private readonly calls = new AsyncLocalStorage<CallAllowance>();
  readonly counters: RedisBudgetCounters = { answered: 0, cutShort: 0, skipped: 0, sentAfterBudget: 0, callsOverBudget: 0, longestCallWaitMs: 0 };

  constructor(readonly perCallMs: number) {}

  /** Middleware: the rest of the request runs with an allowance of its own. */
  readonly middleware = (_req: Request, _res: Response, next: NextFunction): void => {
    this.calls.run(new CallAllowance(this.perCallMs), next);
  };

  /**
   * Counts the commands `client` sends while the request they run for has spent its allowance
   * (`sentAfterBudget`): every operation of a request is meant to go through `spend`, which sends
   * none then; this is the check that none slips past it.
   */
  watch(client: { sendCommand(...args: never[]): unknown }): void {
    const send = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
    (client as { sendCommand: (...args: unknown[]) => unknown }).sendCommand = (...args: unknown[]) => {
      const allowance = this.calls.getStore();
      // Once the call has gone on without Redis (`exhausted`), nothing more may be sent for it. Not by
      // the clock alone: a command queued in time may leave a moment late (auto-pipelining's next tick,
      // the rate limiter's end of turn), in the context of whichever call queued first.
      if (allowance?.exhausted) this.counters.sentAfterBudget += 1;
      return send(...args);
    };
  }

  /** The allowance of the request running now (undefined outside a request). */
  current(): HeldAllowance {
    return this.calls.getStore();
  }

  /** Whether a command of the request holding `allowance` may still be sent now. */
  admits(allowance: HeldAllowance): boolean {
    return !allowance || (!allowance.exhausted && allowance.remainingMs > 0);
  }

  /** Runs `send` as the request holding `allowance` (what `watch` checks its commands against). */
  sendingFor<T>(allowance: HeldAllowance, send: () => T): T {
    return allowance ? this.calls.run(allowance, send) : this.calls.exit(send);
  }

  /**
   * `operation` within what is left of the call's allowance; `instead` when it is spent (before or
   * while waiting). An operation's own failure is rethrown: the caller degrades as it always has.
   */
  async spend<T>(operation: () => Promise<T>, instead: () => T): Promise<T> {
    const allowance = this.calls.getStore();
    if (!allowance) return operation();
    const remainingMs = allowance.remainingMs;
    if (allowance.exhausted || remainingMs <= 0) {
      this.counters.skipped += 1;
      allowance.exhausted = true;
      return instead();
    }
    allowance.started();
    try {
      const answer = await withTimeout(operation(), remainingMs, () => new BudgetSpent());
      this.counters.answered += 1;
      return answer;
    } catch (error) {
      if (error instanceof AllowanceSpentBeforeSending) {
        this.counters.skipped += 1;
        allowance.exhausted = true;
        return instead();
      }
      if (!(error instanceof BudgetSpent)) {
        this.counters.answered += 1;
        throw error;
      }
      this.counters.cutShort += 1;
      if (!allowance.exhausted) this.counters.callsOverBudget += 1;
      allowance.exhausted = true;
      return instead();
    } finally {
      allowance.ended();
      this.counters.longestCallWaitMs = Math.max(this.counters.longestCallWaitMs, Math.round(allowance.spentMs));
    }
  }
}
