import { Injectable, Logger } from '@nestjs/common';
import { Clock } from '../common/clock';
import { AppError } from '../common/errors';
import { withTimeout } from '../common/timeout';
import { backendOf } from '../database/prepared-query';
import { ChargeDetails, ChargeRefusal, CreditsRepository, LedgerWrite } from './credits.repository';
import { PendingGiveBacks } from './pending-give-backs';
import { CallerGate } from './caller-gate';
import type { Caller } from '../common/caller';

/** Most calls one statement carries. */
const MAX_BATCH = 250;
/** How often, GIVE_BACK_PAUSE_MS apart (by the Clock), the give-back of a charge that landed late is tried while the database is away. */
const GIVE_BACK_ATTEMPTS = 120;
const GIVE_BACK_PAUSE_MS = 1000;

/**
 * A charge statement that has not answered by then (a connection gone silent, the row locked
 * elsewhere) fails its calls with 503 SERVICE_UNAVAILABLE, and the account's next calls get a
 * statement of their own instead of queueing behind it. It carries a deadline before that end (see
 * DEADLINE_MARGIN_MS), so it cannot start late; should it have committed with only its reply lost, or
 * commit after the client gave up on it, its charges are given back: those written settled (answers
 * known before charging) by the batcher (giveBackIfLanded), the others by the sweep.
 */
export const CHARGE_STATEMENT_TIMEOUT_MS = 10_000;

/**
 * The statement's own deadline is this much before the wait ends (at most a quarter of it): PostgreSQL
 * refuses to start it, or to wait for the account's lock, past the deadline, so a statement that
 * outlived the wait (queued for a connection, the account locked elsewhere) charges nothing unless it
 * took the account in time (then giveBackIfLanded waits for it). The
 * deadline is read by the database's clock: the margin absorbs a small skew between the two hosts.
 * The deadline and the wait are the statement's, kept by PostgreSQL (clock_timestamp(), lock_timeout)
 * and the driver on the machine's time, not by the injected Clock (src/common/clock.ts): a test
 * shortens them (`timeoutMs`) rather than moving a clock PostgreSQL cannot see.
 */
const DEADLINE_MARGIN_MS = 1000;

/** After its deadline, how long a charge statement already running may still take to commit (by the Clock). */
export const LANDING_MARGIN_MS = 2000;
/** How often (by the Clock) a failed statement's charges are looked for until then. */
export const LANDING_POLL_MS = 250;
/** Past that margin, how long (by the Clock) a give-back waits for the server process that ran the statement to be done (gone or idle). */
export const BACKEND_WAIT_MS = 60_000;

/**
 * A charge written, refused (for the balance or the daily cap, as the statement decided it: a later
 * read may find either changed by a refund meanwhile), or not made because its Idempotency-Key is
 * already charged.
 */
export type ChargeResult = LedgerWrite | { refusedBy: ChargeRefusal } | 'duplicate';

interface QueuedCharge {
  cost: number;
  details: ChargeDetails;
  caller: Caller | undefined;
  resolve: (charge: ChargeResult) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for the charges of one account. Every charge of an account must take its row lock in
 * turn, so concurrent calls of one account cannot run their charges in parallel anyway; instead of N
 * statements queueing on the lock, the calls that arrive while one statement is running are written
 * together by the next (`CreditsRepository.chargeMany`), in arrival order, with the same rules as one
 * by one: none overspends, each gets its own ledger row or a refusal. There is no timer: a lone call
 * goes out in the next turn of the event loop, and batches grow only with the load (one statement per
 * account in flight on this instance). A statement carries calls of one price, taken in order while
 * the balance covers them; calls at another price wait for the next statement (so around a change of
 * settings a cheaper call may be served before a dearer one that came first: a valid order for
 * concurrent calls).
 */
@Injectable()
export class ChargeBatcher {
  private readonly logger = new Logger(ChargeBatcher.name);
  private readonly queues = new Map<string, QueuedCharge[]>();
  /** See CHARGE_STATEMENT_TIMEOUT_MS (a field, so that a test can shorten it). */
  timeoutMs = CHARGE_STATEMENT_TIMEOUT_MS;

  constructor(
    private readonly credits: CreditsRepository,
    private readonly giveBacks: PendingGiveBacks,
    private readonly clock: Clock,
    private readonly gate: CallerGate,
  ) {}

  /**
   * The charge once written, undefined when the balance did not cover it, 'duplicate' when its key is charged already (nothing taken).
   * `caller`: asked right before the statement that would carry the call (CallerGate), which then fails it instead.
   */
  charge(accountId: string, cost: number, details: ChargeDetails, caller?: Caller): Promise<ChargeResult> {
    return new Promise((resolve, reject) => {
      const queue = this.queues.get(accountId);
      const call = { cost, details, caller, resolve, reject };
      if (queue) {
        queue.push(call);
        return;
      }
      this.queues.set(accountId, [call]);
      setImmediate(() => void this.drain(accountId));
    });
  }

  /** Writes the account's queued charges, a statement at a time, until none is left. */
  private async drain(accountId: string): Promise<void> {
    const queue = this.queues.get(accountId)!;
    while (this.dropAbsentCallers(queue) > 0) {
      const batch = takeSamePrice(queue);
      const deadlineInMs = this.timeoutMs - Math.min(DEADLINE_MARGIN_MS, this.timeoutMs / 4);
      // The machine's time: PostgreSQL compares it with its own clock (see DEADLINE_MARGIN_MS).
      const deadline = new Date(Date.now() + deadlineInMs);
      // Once the deadline and the landing margin have passed by the Clock, a statement not landed is not expected
      // to: final once the server process that ran it is done too (giveBackIfLanded).
      const finalAfter = this.clock.now() + deadlineInMs + LANDING_MARGIN_MS;
      const statement = this.credits.chargeMany(accountId, batch[0].cost, batch.map((call) => call.details), { deadline });
      try {
        const { written, duplicates, late, refused } = await withTimeout(statement, this.timeoutMs, ledgerTimedOut);
        if (late) throw ledgerTimedOut();
        for (const call of batch) {
          const { reference } = call.details;
          call.resolve(duplicates.has(reference) ? 'duplicate' : (written.get(reference) ?? { refusedBy: refused?.get(reference) ?? 'balance' }));
        }
      } catch (error) {
        for (const call of batch) call.reject(error);
        this.giveBacks.track(this.giveBackIfLanded(statement, batch, finalAfter));
      }
    }
    this.queues.delete(accountId);
  }

  /** How many calls of the account wait for a charge statement (not counting one running). */
  waiting(accountId: string): number {
    return this.queues.get(accountId)?.length ?? 0;
  }

  /**
   * Fails, uncharged, the queued calls whose client has gone or that waited past the queue deadline
   * (CallerGate), right before the statement that would carry them; returns how many calls remain.
   */
  private dropAbsentCallers(queue: QueuedCharge[]): number {
    let kept = 0;
    for (const call of queue) {
      const absence = this.gate.absence(call.caller);
      if (absence) call.reject(this.gate.refusal(absence));
      else queue[kept++] = call;
    }
    queue.length = kept;
    return kept;
  }

  /**
   * The calls of a failed statement were answered 503, but the statement may still commit (it
   * outlived the wait) or have committed (only its reply was lost). The sweep refunds what it wrote
   * unsettled; what it wrote settled only this gives back, once the statement's fate is known.
   */
  private async giveBackIfLanded(statement: Promise<unknown>, batch: QueuedCharge[], finalAfter: number): Promise<void> {
    const references = batch.filter((call) => call.details.settled).map((call) => call.details.reference);
    if (references.length === 0) return;
    const failure = await statement.then(
      () => undefined,
      (error: unknown) => error,
    );
    // The server process that ran it, when its connection broke (undefined: unknown, e.g. behind a pooler).
    const backend = failure === undefined ? undefined : backendOf(failure);
    // A statement whose connection broke may still be running on the server and commit a moment after
    // the client saw the error. "Not landed" is final for a look begun once (1) its deadline (by which
    // PostgreSQL refuses to start it) and LANDING_MARGIN_MS for its own run have passed (`finalAfter`),
    // and (2) the server process that ran it is done (gone, or idle), when it is known: a statement past its margin
    // (a starved server, a second lock wait) then still counts. (2) is waited for BACKEND_WAIT_MS at most.
    const giveUpAfter = finalAfter + BACKEND_WAIT_MS;
    for (const reference of references) {
      for (let failures = 0; ; ) {
        try {
          // Read before the look, not after: a look whose snapshot predates the landing but whose answer
          // comes after the window (a slow reply) saw nothing final. Only a look begun after it did.
          const now = this.clock.now();
          // A failed check counts as running: the look below still happens.
          const running = now >= finalAfter && backend !== undefined && (await this.credits.backendRunning(backend).catch(() => true));
          const final = now >= finalAfter && (!running || now >= giveUpAfter);
          if (await this.credits.refundLanded(reference, 'call answered 503: its charge landed late')) {
            this.logger.warn(`Charge ${reference} landed after its call was answered 503: refunded`);
          } else if (!final) {
            await this.clock.sleep(LANDING_POLL_MS);
            continue;
          } else if (running) {
            this.logger.error(`Charge ${reference} of a call answered 503 may stand: the server process ${backend} that ran its statement is still busy ${(LANDING_MARGIN_MS + BACKEND_WAIT_MS) / 1000} s past its deadline`);
          } else {
            this.logger.log(`Charge ${reference} of a call answered 503: nothing to give back (not landed by its statement's deadline, or refunded or answered already)`);
          }
          break;
        } catch (error) {
          // Failed looks have a budget of their own: the empty looks before the window do not spend it.
          if (++failures >= GIVE_BACK_ATTEMPTS) {
            this.logger.error(`Charge ${reference} of a call answered 503 may stand; give-back failed: ${(error as Error).message}`);
            break;
          }
          await this.clock.sleep(GIVE_BACK_PAUSE_MS);
        }
      }
    }
  }
}

const ledgerTimedOut = () =>
  new AppError('SERVICE_UNAVAILABLE', 'The credits ledger did not answer in time. Nothing was charged; please retry.');

/** Removes from the queue, in order, up to MAX_BATCH calls at the price of the first. */
function takeSamePrice(queue: QueuedCharge[]): QueuedCharge[] {
  const cost = queue[0].cost;
  const batch: QueuedCharge[] = [];
  let kept = 0;
  for (const call of queue) {
    if (call.cost === cost && batch.length < MAX_BATCH) batch.push(call);
    else queue[kept++] = call;
  }
  queue.length = kept;
  return batch;
}
