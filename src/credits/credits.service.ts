import { Injectable, Logger, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { KeysetPage, keysetPage } from '../common/keyset-page';
import { AppError } from '../common/errors';
import { Metrics } from '../metrics/metrics';
import { ChargeBatcher } from './charge-batcher';
import { SettlementBatcher } from './settlement-batcher';
import { ChargeDetails, CreditsRepository, LedgerRow, LedgerWrite } from './credits.repository';

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
   * Takes `cost` credits for one call, or throws 402 INSUFFICIENT_CREDITS and takes nothing. Written
   * together with the account's other concurrent charges (see ChargeBatcher). A call whose
   * Idempotency-Key already has a kept charge is not charged again: 409 IDEMPOTENCY_CONFLICT.
   */
  async charge(accountId: string, cost: number, details: ChargeDetails): Promise<LedgerWrite> {
    const charge = await this.charges.charge(accountId, cost, details);
    if (charge === 'duplicate') throw new AppError('IDEMPOTENCY_CONFLICT', KEY_IN_USE);
    if (!charge) {
      const balance = await this.credits.balance(accountId);
      throw new AppError(
        'INSUFFICIENT_CREDITS',
        `Your credits have run out: this call costs ${cost} and your balance is ${balance ?? 0}. Top up your balance to continue.`,
      );
    }
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
    if (!reservation) {
      const balance = await this.credits.balance(accountId);
      throw new AppError(
        'INSUFFICIENT_CREDITS',
        `Your credits have run out: this job needs ${amount} and your balance is ${balance ?? 0}. ` +
          'Top up your balance, or send fewer numbers.',
      );
    }
    this.metrics?.creditsCharged(amount);
    return reservation;
  }

  /**
   * CHARGE of several calls at `cost` each, in the caller's transaction and settled at once (the
   * caller refunds its failed calls with refundPart). Taken in order while the balance covers them;
   * returns the written charges by reference (a missing reference was refused: balance too short).
   */
  async chargeEachWithin(transaction: EntityManager, accountId: string, cost: number, calls: ChargeDetails[]): Promise<Map<string, LedgerWrite>> {
    const { written } = await this.credits.chargeMany(accountId, cost, calls.map((call) => ({ ...call, settled: true })), transaction);
    this.metrics?.creditsCharged(cost * written.size);
    return written;
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

  usage(accountId: string, limit: number, cursor: string | undefined): Promise<KeysetPage<LedgerRow>> {
    return keysetPage('le', limit, cursor, (rows, beforeId) => this.credits.page(accountId, rows, beforeId), (entry) => entry.id);
  }

  ledgerSum(accountId: string): Promise<number> {
    return this.credits.ledgerSum(accountId);
  }
}

