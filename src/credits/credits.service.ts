import { Injectable, Logger, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { keysetPage } from '../common/keyset-page';
import { AppError } from '../common/errors';
import { Metrics } from '../metrics/metrics';
import { ChargeBatcher } from './charge-batcher';
import { SettlementBatcher } from './settlement-batcher';
import { ChargeDetails, ChargeRefusal, CreditsRepository, LedgerWrite } from './credits.repository';
import { UsagePageDto } from './dto/usage.dto';

export const ANSWER_NOT_RECORDED =
  'The answer could not be recorded because the service database is unreachable. Nothing was charged; please retry.';

export const KEY_IN_USE =
  'A request with this Idempotency-Key is still running, or its charge is still being settled; retry when it has answered.';

@Injectable()
export class CreditsService {
  private readonly logger = new Logger(CreditsService.name);

  constructor(
    private readonly credits: CreditsRepository,
    private readonly charges: ChargeBatcher,
    private readonly settlements: SettlementBatcher,
    @Optional() private readonly metrics?: Metrics,
  ) {}

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
   * again: 409 IDEMPOTENCY_CONFLICT.
   */
  async charge(accountId: string, cost: number, details: ChargeDetails): Promise<LedgerWrite> {
    const charge = await this.charges.charge(accountId, cost, details);
    if (charge === 'duplicate') throw new AppError('IDEMPOTENCY_CONFLICT', KEY_IN_USE);
    if (!charge) throw await this.refusal(accountId, cost, 'call');
    this.metrics?.creditsCharged(cost);
    return charge;
  }

  /**
   * Reserves a bulk job's whole cost inside the caller's transaction (settled at once, so the
   * abandoned-charge sweeper never touches it), or throws 402 INSUFFICIENT_CREDITS, which rolls the
   * transaction back: then nothing is charged.
   */
  async reserve(
    transaction: EntityManager,
    accountId: string,
    amount: number,
    details: { reference: string; source: string | null; reason: string },
  ): Promise<LedgerWrite> {
    const reservation = await this.credits.reserve(transaction, accountId, amount, details);
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
   * Why a charge of `amount` was refused: the daily cap when it does not leave room for it (a top-up
   * would not help), otherwise the balance.
   */
  private async refusal(accountId: string, amount: number, what: 'call' | 'job'): Promise<AppError> {
    const state = await this.credits.spendingState(accountId);
    const cap = state?.dailyCreditLimit ?? null;
    if (state && cap !== null && state.spentToday + amount > cap) {
      const resets = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1)).toISOString();
      return new AppError(
        'SPENDING_LIMIT_REACHED',
        `This ${what} costs ${amount} credits and would pass your daily spending limit of ${cap} credits: ` +
          `${Math.max(0, cap - state.spentToday)} left today. The limit resets at ${resets} (00:00 UTC); ` +
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
   * CHARGE of several calls at `cost` each, in the caller's transaction and settled at once (the
   * caller refunds its failed calls with refundPart). Taken in order while the balance (and today's
   * allowance under the daily cap) covers them; returns the written charges by reference (a missing
   * reference was refused) and why the others were refused (the balance or the daily cap; null: none was).
   */
  async chargeEachWithin(
    transaction: EntityManager,
    accountId: string,
    cost: number,
    calls: ChargeDetails[],
  ): Promise<{ written: Map<string, LedgerWrite>; refusedBy: ChargeRefusal | null }> {
    const { written, refusedBy } = await this.credits.chargeMany(accountId, cost, calls.map((call) => ({ ...call, settled: true })), { transaction });
    this.metrics?.creditsCharged(cost * written.size);
    return { written, refusedBy };
  }

  /**
   * Gives back part of a reservation or a settled charge, exactly once per charge (false when already
   * done); with `transaction`, in the caller's transaction.
   */
  async refundPart(chargeId: string, amount: number, details: { reference: string; reason: string }, transaction?: EntityManager): Promise<boolean> {
    const refunded = await this.credits.refundPart(chargeId, amount, details, transaction);
    if (refunded) this.metrics?.creditsRefunded(amount);
    return refunded;
  }

  /**
   * The call answered: resolves once its charge is final in the database (batched with others, see
   * SettlementBatcher). Throws 503 SERVICE_UNAVAILABLE when it cannot be made final: the statement
   * failed and the charge was given back (or is left to the sweep), or it was refunded already.
   */
  async settle(chargeId: string): Promise<void> {
    const settled = await this.settlements.settle(chargeId).catch(async (error: Error) => {
      if (await this.settleFailed(chargeId)) return true;
      this.logger.warn(`Answered call not settled (answered 503 instead): ${error.message}`);
      return false;
    });
    if (!settled) throw new AppError('SERVICE_UNAVAILABLE', ANSWER_NOT_RECORDED);
  }

  /**
   * The settle of an answered call failed: gives its charge back, unless the settle did commit and
   * only its reply was lost. True when the charge stands (the call is answered and final); false when
   * it was refunded now, or nothing could be told (the database is away: the sweep refunds it later).
   */
  private async settleFailed(chargeId: string): Promise<boolean> {
    try {
      if (await this.refund(chargeId, 'answer could not be recorded')) return false;
      return await this.credits.isAnswered(chargeId);
    } catch (error) {
      this.logger.warn(`Refund of charge ${chargeId} deferred to the sweep: ${(error as Error).message}`);
      return false;
    }
  }

  /** Waits for the settles queued so far (tests, shutdown). */
  flushSettlements(): Promise<void> {
    return this.settlements.flush();
  }

  /** Gives a charge back, exactly once whoever asks and however often. */
  async refund(chargeId: string, reason: string): Promise<boolean> {
    const refunded = await this.credits.refund(chargeId, reason);
    if (refunded === undefined) return false;
    this.metrics?.creditsRefunded(refunded);
    return true;
  }

  /** Refunds charges whose calls never answered (the process died between charge and answer). */
  async refundAbandonedCharges(olderThanSeconds: number): Promise<number> {
    let refunded = 0;
    for (;;) {
      const ids = await this.credits.findAbandonedCharges(olderThanSeconds, 500);
      for (const id of ids) if (await this.refund(id, 'call never answered')) refunded++;
      if (ids.length < 500) break;
    }
    if (refunded > 0) this.logger.warn(`Refunded ${refunded} charge(s) whose calls never answered`);
    return refunded;
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
        created_at: entry.createdAt.toISOString(),
      })),
      next_cursor: page.nextCursor,
    };
  }

  ledgerSum(accountId: string): Promise<number> {
    return this.credits.ledgerSum(accountId);
  }
}

