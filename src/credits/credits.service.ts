import { Injectable, Logger, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Clock } from '../common/clock';
import { keysetPage } from '../common/keyset-page';
import { AppError } from '../common/errors';
import { Metrics } from '../metrics/metrics';
import { ChargeBatcher } from './charge-batcher';
import { CallerGate } from './caller-gate';
import type { Caller } from '../common/caller';
import { PendingGiveBacks } from './pending-give-backs';
import { SettlementBatcher } from './settlement-batcher';
import { ChargeDetails, ChargeRefusal, CreditsRepository, LedgerWrite } from './credits.repository';
import { UsagePageDto } from './dto/usage.dto';
import { showProvenance, type StoredProvenance } from '../checks/provenance';
import { creditCount } from '../common/credit-count';

export const ANSWER_NOT_RECORDED =
  'The answer could not be recorded because the service database is unreachable. Nothing was charged; please retry.';

/** A settle failed and the database could not be asked whether it had committed (CreditsService.resolveLostSettle). */
export const OUTCOME_UNKNOWN =
  'The answer could not be recorded because the service database is unreachable. If this call was charged, the charge is given back automatically once the database answers; please retry.';

/** The pauses (by the Clock) between the attempts at resolving the outcome of a call whose settle failed. */
export const RESOLVE_PAUSES_MS: readonly number[] = [100, 250, 500, 1000];
/** How long a fresh connection of the resolution may take to connect, and each of its statements (the driver's deadline, real time). */
const RESOLVE_TIMEOUT_MS = 2000;
/** The pauses (by the Clock) between the fresh attempts at refunding a call that failed (CreditsService.refundFailedCall). */
export const REFUND_PAUSES_MS = [100, 250];
/** How often, GIVE_BACK_PAUSE_MS apart (by the Clock), the give-back of a 503 whose settle's outcome was unknown is tried. */
export const GIVE_BACK_ATTEMPTS = 120;
export const GIVE_BACK_PAUSE_MS = 1000;

/**
 * The call's Idempotency-Key already has a kept charge: nothing was taken. A 409 IDEMPOTENCY_CONFLICT
 * with the table's default message; idempotency/ (whose key it is) words it for the client.
 */
export class KeyAlreadyCharged extends AppError {
  constructor() {
    super('IDEMPOTENCY_CONFLICT');
  }
}

@Injectable()
export class CreditsService {
  private readonly logger = new Logger(CreditsService.name);
  /** Charges this process took and has neither settled nor refunded yet: its calls still running. */
  private readonly open = new Set<string>();

  constructor(
    private readonly credits: CreditsRepository,
    private readonly charges: ChargeBatcher,
    private readonly settlements: SettlementBatcher,
    private readonly giveBacks: PendingGiveBacks,
    private readonly clock: Clock,
    private readonly gate: CallerGate,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  /**
   * The key's settled charge is answered again (a retry of an Idempotency-Key), so no late give-back
   * refunds it; false when it was refunded first (then the retry must not be answered for free).
   */
  markKeyChargeAnswered(idempotencyKeyId: string): Promise<boolean> {
    return this.credits.markKeyChargeAnswered(idempotencyKeyId);
  }

  /** Credits refunded so far of each charge (bulk jobs' reservations), by charge id (0 when none). */
  async refundedOf(chargeIds: string[]): Promise<Map<string, number>> {
    return this.credits.refundedOf(chargeIds);
  }

  async balance(accountId: string): Promise<number> {
    const balance = await this.credits.balance(accountId);
    if (balance === undefined) throw new AppError('NOT_FOUND', `No account ${accountId}.`);
    return balance;
  }

  /** Adds credits (amount > 0, TOPUP) or corrects them (amount < 0, ADJUSTMENT, never below zero). */
  async adjust(accountId: string, amount: number, reason: string, actor: string, reference = `admin:${randomUUID()}`): Promise<number> {
    if (!Number.isSafeInteger(amount) || amount === 0) {
      throw new AppError('INVALID_REQUEST', 'amount must be a non-zero integer.');
    }
    const type = amount > 0 ? 'TOPUP' : 'ADJUSTMENT';
    const written = await this.credits.credit(accountId, type, amount, { reference, reason, actor });
    if (written) return written.balanceAfter;
    const balance = await this.balance(accountId);
    throw new AppError('INVALID_REQUEST', `amount ${amount} would take the balance (${balance}) below zero.`);
  }

  /**
   * Takes `cost` credits for one call, or throws 402 INSUFFICIENT_CREDITS (or SPENDING_LIMIT_REACHED,
   * past the daily cap) and takes nothing. Written together with the account's other concurrent
   * charges (see ChargeBatcher). A call whose Idempotency-Key already has a kept charge is not charged
   * again: KeyAlreadyCharged. `caller`: the client of an HTTP call, asked right before the statement
   * (CallerGate): a gone client's call or one past the queue deadline fails with CallerNotServed, uncharged.
   */
  async charge(accountId: string, cost: number, details: ChargeDetails, caller?: Caller): Promise<LedgerWrite> {
    const charge = await this.charges.charge(accountId, cost, details, caller);
    if (charge === 'duplicate') throw new KeyAlreadyCharged();
    if ('refusedBy' in charge) throw await this.refusal(accountId, cost, 'call', charge.refusedBy);
    this.metrics?.creditsCharged(cost);
    if (!details.settled) this.open.add(charge.id);
    return charge;
  }

  /**
   * Reserves a bulk job's whole cost inside the transaction its caller opened (settled at once, so the
   * abandoned-charge sweeper never touches it), or throws 402 INSUFFICIENT_CREDITS, which rolls the
   * transaction back: then nothing is charged. `caller`: as for `charge`, asked right before the statement.
   */
  async reserve(
    accountId: string,
    amount: number,
    details: { reference: string; source: string | null; reason: string },
    caller?: Caller,
  ): Promise<LedgerWrite> {
    this.gate.admit(caller);
    const reservation = await this.credits.reserve(accountId, amount, details);
    if (!reservation) throw await this.refusal(accountId, amount, 'job');
    this.metrics?.creditsCharged(amount);
    return reservation;
  }

  /**
   * Whether `amount` could be charged now: the balance, and what today's daily cap leaves (null: no
   * cap); `refusedBy` says what would refuse it (the cap first: a top-up would not help). Nothing
   * (amount 0) is always affordable, as a charge of nothing takes nothing. A quote, not a
   * reservation: concurrent calls may take it first.
   */
  async affordable(accountId: string, amount: number): Promise<{ balance: number; sufficient: boolean; refusedBy: ChargeRefusal | null }> {
    const state = await this.credits.spendingState(accountId);
    if (!state) throw new AppError('NOT_FOUND', `No account ${accountId}.`);
    const overCap = amount > 0 && state.dailyCreditLimit !== null && state.spentToday + amount > state.dailyCreditLimit;
    const refusedBy = overCap ? 'spending_limit' : state.balance < amount ? 'balance' : null;
    return { balance: state.balance, sufficient: refusedBy === null, refusedBy };
  }

  /**
   * The 402 of a charge of `amount` refused by `refusedBy` (what the charge statement found), or, when
   * the caller does not know, by what a read finds now: the daily cap when it does not leave room for
   * it (a top-up would not help), otherwise the balance. The figures in the message are read now.
   */
  private async refusal(accountId: string, amount: number, what: 'call' | 'job', refusedBy?: ChargeRefusal): Promise<AppError> {
    const state = await this.credits.spendingState(accountId);
    const cap = state?.dailyCreditLimit ?? null;
    const overCap = refusedBy ? refusedBy === 'spending_limit' : cap !== null && state !== undefined && state !== null && state.spentToday + amount > cap;
    if (overCap && cap !== null) {
      const now = this.clock.date(); // read once: three reads could straddle midnight (2026-01-02 for 2027-01-01)
      const resets = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();
      return new AppError(
        'SPENDING_LIMIT_REACHED',
        `This ${what} costs ${creditCount(amount)} and would pass your daily spending limit of ${creditCount(cap)}: ` +
          `${Math.max(0, cap - (state?.spentToday ?? 0))} left today. The limit resets at ${resets} (00:00 UTC); ` +
          'raise or remove daily_credit_limit with PATCH /api/v1/settings. Nothing was charged.',
      );
    }
    return new AppError(
      'INSUFFICIENT_CREDITS',
      what === 'call'
        ? `Your credits have run out: this call costs ${amount} and your balance is ${state?.balance ?? 0}. Top up your balance to continue.`
        : `Your credits have run out: this job needs ${amount} and your balance is ${state?.balance ?? 0}. Top up your balance, or send fewer numbers.`,
    );
  }

  /**
   * CHARGE of several calls at `cost` each, in the transaction its caller opened and settled at once (the
   * caller refunds its failed calls with refundPart). Taken in order while the balance (and today's
   * allowance under the daily cap) covers them; returns the written charges by reference (a missing
   * reference was refused) and why the others were refused (the balance or the daily cap; null: none was).
   */
  async chargeEachWithin(
    accountId: string,
    cost: number,
    calls: ChargeDetails[],
  ): Promise<{ written: Map<string, LedgerWrite>; refusedBy: ChargeRefusal | null }> {
    const { written, refusedBy } = await this.credits.chargeMany(accountId, cost, calls.map((call) => ({ ...call, settled: true })), { joined: true });
    this.metrics?.creditsCharged(cost * written.size);
    return { written, refusedBy };
  }

  /**
   * Gives back part of a reservation or a settled charge, exactly once per charge (false when already
   * done); inside a transaction a service opened, in that transaction.
   */
  async refundPart(chargeId: string, amount: number, details: { reference: string; reason: string }): Promise<boolean> {
    const refunded = await this.credits.refundPart(chargeId, amount, details);
    if (refunded) this.metrics?.creditsRefunded(amount);
    return refunded;
  }

  /**
   * The call answered: resolves once its charge is final in the database (batched with others, see
   * SettlementBatcher). Throws 503 SERVICE_UNAVAILABLE when it cannot be made final: the statement
   * failed and the charge was given back, or it was refunded already. A failed settle may have
   * committed with only its reply lost: the outcome is then resolved, never guessed (resolveLostSettle).
   * `answeredBy`: which provider answered each check and when, kept on the charge by the settle itself
   * (a settle resolved after a lost reply keeps what it wrote, or nothing: the answer is not failed for it).
   * `caller`: the HTTP client, asked again here: one gone since its charge (its FIN read while the call
   * was worked) gets its charge refunded instead (503 CallerNotServed, which no one reads).
   */
  async settle(chargeId: string, answeredBy: StoredProvenance | null = null, caller?: Caller): Promise<void> {
    if (caller?.gone()) {
      // Its client left while the call was worked (the charge asked the gate before its FIN was read):
      // the answer has no reader, so the charge is given back rather than settled (issue 35 point 1).
      await this.refundFailedCall(chargeId, 'client gone before its answer');
      throw this.gate.refusal('client_gone', true);
    }
    try {
      const settled = await this.settlements.settle(chargeId, answeredBy).catch((error: Error) => this.resolveLostSettle(chargeId, error));
      if (!settled) throw new AppError('SERVICE_UNAVAILABLE', ANSWER_NOT_RECORDED);
    } finally {
      this.open.delete(chargeId);
    }
  }

  /**
   * The settle of an answered call failed, maybe after it committed. Asked on a fresh connection (the
   * pooled ones may be broken by the same fault), a few times over a bounded wait: true when the settle
   * stands (the call is answered 200); false when the charge was refunded, now or before (503, nothing
   * charged). When the database cannot be asked at all, the call is answered 503 saying so, and its
   * charge is given back, settled or not, as soon as the database answers (giveBackLater): a 503 is
   * never left charged, whichever way the settle went.
   */
  private async resolveLostSettle(chargeId: string, settleError: Error): Promise<boolean> {
    const outcome = await this.resolveUnanswered(chargeId, 'answer could not be recorded');
    if (outcome === 'answered') {
      this.logger.warn(`Settle of charge ${chargeId} failed (${settleError.message}) but had committed: answered`);
      return true;
    }
    if (outcome === 'refunded') {
      this.logger.warn(`Answered call not settled (answered 503 instead, its charge refunded): ${settleError.message}`);
      return false;
    }
    this.logger.error(`Settle of charge ${chargeId} failed (${settleError.message}) and its outcome is unknown: answered 503, the charge given back later`);
    this.giveBacks.track(this.giveBackLater(chargeId));
    throw new AppError('SERVICE_UNAVAILABLE', OUTCOME_UNKNOWN);
  }

  /**
   * Refunds the charge of a call that failed (the upstream did not answer): through the pool, then on
   * fresh connections (the pooled one may be broken by a reset) over a short wait (REFUND_PAUSES_MS);
   * should that fail, the charge, unsettled, is the sweep's. Shorter than resolveLostSettle's: nothing
   * is unknown about this call (it answers 503 either way), and its client should not wait long on a
   * database that is away.
   */
  async refundFailedCall(chargeId: string, reason: string): Promise<void> {
    this.open.delete(chargeId);
    try {
      await this.refund(chargeId, reason);
      return;
    } catch (error) {
      this.logger.warn(`Refund of charge ${chargeId} failed (${(error as Error).message}): trying again on a fresh connection`);
    }
    if ((await this.resolveUnanswered(chargeId, reason, REFUND_PAUSES_MS)) === 'unknown') {
      this.logger.warn(`Refund of charge ${chargeId} deferred to the sweep: the database is unreachable`);
    }
  }

  /** See CreditsRepository.resolveUnanswered; 'unknown' once RESOLVE_PAUSES_MS are spent without an answer. */
  private async resolveUnanswered(chargeId: string, reason: string, pausesMs: readonly number[] = RESOLVE_PAUSES_MS): Promise<'answered' | 'refunded' | 'unknown'> {
    for (const pause of [...pausesMs, undefined]) {
      try {
        const { outcome, given } = await this.credits.resolveUnanswered(chargeId, reason, RESOLVE_TIMEOUT_MS);
        if (given > 0) this.metrics?.creditsRefunded(given);
        return outcome;
      } catch (error) {
        if (pause === undefined) {
          this.logger.warn(`The outcome of charge ${chargeId} could not be read: ${(error as Error).message}`);
          break;
        }
        await this.clock.sleep(pause);
      }
    }
    return 'unknown';
  }

  /** The charge of a call answered 503 with its settle's outcome unknown, refunded once the database answers. */
  private async giveBackLater(chargeId: string): Promise<void> {
    for (let attempt = 1; attempt <= GIVE_BACK_ATTEMPTS; attempt++) {
      await this.clock.sleep(GIVE_BACK_PAUSE_MS);
      try {
        const given = await this.credits.refundAnswered503(chargeId, 'call answered 503: its settle could not be confirmed', RESOLVE_TIMEOUT_MS);
        if (given !== undefined) this.metrics?.creditsRefunded(given);
        return;
      } catch {
        // still away: try again
      }
    }
    this.logger.error(`Charge ${chargeId} of a call answered 503 may stand: the database did not answer for ${(GIVE_BACK_ATTEMPTS * GIVE_BACK_PAUSE_MS) / 1000} s`);
  }

  /** Waits for the settles queued so far (tests, shutdown). */
  flushSettlements(): Promise<void> {
    return this.settlements.flush();
  }

  /** Gives a charge back, exactly once whoever asks and however often. */
  async refund(chargeId: string, reason: string): Promise<boolean> {
    this.open.delete(chargeId);
    const refunded = await this.credits.refund(chargeId, reason);
    if (refunded === undefined) return false;
    this.metrics?.creditsRefunded(refunded);
    return true;
  }

  /**
   * At shutdown, once the calls still running were cut off (SHUTDOWN_TIMEOUT_MS): their charges are
   * refunded now, while the database is still open, instead of by the sweep after the bound (on one
   * instance, at its next start). Exactly once as always: a cut call that settles meanwhile keeps its
   * charge (its answer was written), and one that settles after finds its charge refunded.
   */
  async refundCallsCutOff(): Promise<number> {
    const ids = [...this.open];
    this.open.clear();
    if (ids.length === 0) return 0;
    const refunded = await this.refundAll(ids, 'call cut off by the shutdown');
    if (refunded > 0) this.logger.warn(`Refunded ${refunded} charge(s) of the calls the shutdown cut off`);
    return refunded;
  }

  /** Refunds charges whose calls never answered (the process died between charge and answer). */
  async refundAbandonedCharges(olderThanSeconds: number): Promise<number> {
    let refunded = 0;
    for (;;) {
      const ids = await this.credits.findAbandonedCharges(this.clock.inMs(-olderThanSeconds * 1000), 500);
      if (ids.length === 0) break;
      refunded += await this.refundAll(ids, 'call never answered');
      if (ids.length < 500) break;
    }
    if (refunded > 0) this.logger.warn(`Refunded ${refunded} charge(s) whose calls never answered`);
    return refunded;
  }

  /**
   * Refunds the charges in one statement; when it cannot (one was refunded or settled meanwhile, by
   * another instance or its late answer), one by one, each exactly once as always.
   */
  private async refundAll(chargeIds: string[], reason: string): Promise<number> {
    try {
      const { refunded, credits } = await this.credits.refundAbandoned(chargeIds, reason);
      // Fewer than asked: the others were settled meanwhile (their calls answered late), so not refunded.
      if (credits > 0) this.metrics?.creditsRefunded(credits);
      return refunded;
    } catch (error) {
      this.logger.warn(`Refunding ${chargeIds.length} unanswered charges in one statement failed (${(error as Error).message}); one by one`);
      let refunded = 0;
      for (const id of chargeIds) if (await this.refund(id, reason)) refunded++;
      return refunded;
    }
  }

  /** The ledger as the customer sees it (GET /api/v1/usage, and the admin's view of an account). */
  async usage(accountId: string, limit: number, cursor: string | undefined): Promise<UsagePageDto> {
    const page = await keysetPage('le', limit, cursor, (rows, beforeId) => this.credits.page(accountId, rows, beforeId), (entry) => entry.id);
    return {
      entries: page.rows.map((entry) => ({
        id: entry.id,
        type: entry.type,
        amount: entry.amount,
        balance_after: entry.balanceAfter,
        phone: entry.phone,
        source: entry.source,
        answered_by: entry.type === 'CHARGE' ? showProvenance(entry.answeredBy) : null,
        created_at: entry.createdAt.toISOString(),
      })),
      next_cursor: page.nextCursor,
    };
  }

  ledgerSum(accountId: string): Promise<number> {
    return this.credits.ledgerSum(accountId);
  }
}

