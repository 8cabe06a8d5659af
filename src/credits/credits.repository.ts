import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Clock } from '../common/clock';
import { joinedTransaction, TransactionHost, type TypeOrmTx } from '../database/transactions';
import { NO_KEY_ABOVE } from '../common/keyset-page';
import { hasSqlState, isUniqueViolation } from '../common/unique-violation';
import { FreshQuery, onFreshConnection } from '../database/fresh-connection';
import { preparedQuery } from '../database/prepared-query';
import type { StoredProvenance } from '../checks/provenance';
import { LedgerEntryType } from './ledger-entry.entity';
import { ASYNC_COMMIT, CHARGE_DAY, CHARGE_STATEMENT, ChargeRow, DAILY_CAP, GIVE_BACK, IDEMPOTENT_CHARGE_INDEX, lowBalanceAlert, SPENT_TODAY } from './ledger-sql';

export interface LedgerWrite {
  id: string;
  balanceAfter: number;
}

export interface ChargeDetails {
  reference: string;
  phone: string | null;
  source: string | null;
  /** The id of the Idempotency-Key the call was made with: at most one kept charge per id. */
  idempotencyKeyId?: string | null;
  /** The answer is known before the charge (a cache hit, no upstream needed): written settled. */
  settled?: boolean;
  /** With `settled`: which provider answered each check and when (the cached answers'), kept on the row. */
  answeredBy?: StoredProvenance | null;
}

/** An answered call's settle: its charge, and which provider answered each check and when (null: none was asked). */
export interface SettleRequest {
  chargeId: string;
  answeredBy: StoredProvenance | null;
}

/** Why a charge was refused: the balance, or the daily spending cap (a top-up would not help). */
export type ChargeRefusal = 'balance' | 'spending_limit';

export interface ChargeOutcome {
  /** The charges written, by reference. */
  written: Map<string, LedgerWrite>;
  /** References not charged because their Idempotency-Key already has a charge. */
  duplicates: Set<string>;
  /** Nothing was charged: the statement reached the account after its deadline, or could not lock it by then. */
  late?: boolean;
  /** Why the calls neither written nor duplicates were refused (the first of them); null when none was. */
  refusedBy: ChargeRefusal | null;
  /** Why each of them was refused, by reference, as the statement decided it. */
  refused?: Map<string, ChargeRefusal>;
}

const LOCK_NOT_AVAILABLE = '55P03';
/**
 * PostgreSQL broke a lock cycle (40P01) or a serialization conflict (40001) by failing this statement: it ran
 * alone in its transaction, so it was rolled back whole and runs again. The charge statement takes its account
 * and then, inserting its row, may wait on the ledger's unique index of Idempotency-Keys for a refund of a charge
 * of the same key, which locked that charge and waits for the account (a fault run logged such a 40P01 in the
 * charge statement; which statement was the other side was not logged). 40001 cannot happen at READ COMMITTED,
 * which the service runs at; it is listed for a database set to a stricter default.
 */
const ROLLED_BACK_BY_CONFLICT = ['40P01', '40001'];

/** A row when the charge $1 is settled and not refunded: its call answered. */
const IS_ANSWERED = `SELECT 1 FROM ledger_entries c
  WHERE c.id = $1 AND c.type = 'CHARGE' AND c.settled_at IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.refund_of = c.id)`;

export interface LedgerRow {
  id: string;
  type: LedgerEntryType;
  amount: number;
  balanceAfter: number;
  phone: string | null;
  source: string | null;
  /** A CHARGE's provenance (null for other rows, refunded charges, and calls that asked no provider). */
  answeredBy: StoredProvenance | null;
  createdAt: Date;
}

export interface SpendingState {
  balance: number;
  dailyCreditLimit: number | null;
  spentToday: number;
}

/**
 * Every change of a balance, as ONE statement that moves accounts.balance and appends the ledger
 * row together: atomic without an explicit transaction, and it cannot overdraw (the WHERE clause
 * and the CHECK constraint) nor be written twice (the unique reference).
 */
@Injectable()
export class CreditsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly txHost: TransactionHost<TypeOrmTx>,
    private readonly clock: Clock,
  ) {}

  /** TOPUP (+) or ADJUSTMENT (±). Undefined when the account is missing or would go below zero. */
  async credit(
    accountId: string,
    type: 'TOPUP' | 'ADJUSTMENT',
    amount: number,
    details: { reference: string; reason: string | null; actor: string | null },
  ): Promise<LedgerWrite | undefined> {
    const rows: Array<{ id: string; balance_after: string }> = await this.txHost.tx.query(
      `WITH moved AS (
         UPDATE accounts SET balance = balance + $2 WHERE id = $1 AND balance + $2 >= 0 RETURNING id, balance),
       rearm AS (
         UPDATE account_settings s SET low_balance_alerted = false FROM moved
          WHERE s.account_id = moved.id AND s.low_balance_alerted AND moved.balance >= s.low_balance_threshold RETURNING 1)
       INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, reason, actor, settled_at)
       SELECT id, $3, $2, balance, $4, $5, $6, now() FROM moved
       RETURNING id, balance_after`,
      [accountId, amount, type, details.reference, details.reason, details.actor],
    );
    return rows[0] && { id: rows[0].id, balanceAfter: Number(rows[0].balance_after) };
  }

  /**
   * CHARGE of several calls of one account at the same price, in ONE statement: the account row is
   * locked (concurrent charges queue behind it, here and on other instances), then the calls are taken
   * in order while the balance covers them: the first ⌊balance / cost⌋ are written, each as its own
   * ledger row with its own balance_after, and the balance moves by exactly their sum. The rest are
   * refused, taking nothing (the CHECK constraint would fail the statement as a whole before any
   * overspend). The new balance is set from the locked one, not as `balance - …`: PostgreSQL builds
   * the new row from the version its snapshot saw and checks constraints on it before it re-reads a
   * row updated meanwhile (a refund committed while this statement waited for the lock), so
   * `balance - …` could fail the CHECK for a balance that in fact covers the calls. The lock is held
   * from the read to the commit, so the locked value is the current one.
   *
   * A call made with an Idempotency-Key carries the key's id, and the unique index on it lets one
   * charge per key exist (until a refund clears it): a call whose key already has a charge is
   * skipped, taking nothing (`duplicates`). The skip reads the statement's snapshot; a charge that
   * another instance committed after it was taken fails the INSERT on the index instead, and the
   * statement runs again with a fresh snapshot, which then sees that charge and skips the call. A
   * statement PostgreSQL failed to break a deadlock (or a serialization conflict) runs again too: it
   * was rolled back whole (ROLLED_BACK_BY_CONFLICT), and its caller would otherwise answer 500.
   *
   * A call whose answer is already known (`settled`) is written settled: final at once, never taken
   * by the sweep. The others stay unsettled until their calls answer (settle) or are refunded.
   * Returns the written charges by reference; a reference in neither result was refused (balance).
   * With `joined`, the statement runs in the transaction its caller's service opened (the caller's rows commit with
   * the charges, or nothing does); a failed statement is then not re-run here, since it aborted the
   * caller's transaction (a unique violation or a deadlock alike: the caller's transaction fails whole).
   *
   * The daily spending cap is enforced by the same rule in the same statement: a call is taken only
   * while today's charges (spent_today of the locked row, so the latest count whatever the instance)
   * plus it stay within daily_credit_limit, and the count moves with the balance.
   */
  async chargeMany(
    accountId: string,
    cost: number,
    calls: ChargeDetails[],
    options: { joined?: boolean; deadline?: Date } = {},
  ): Promise<ChargeOutcome> {
    if (options.joined) {
      const transaction = joinedTransaction(this.txHost);
      return this.chargeOnce((values) => transaction.query(CHARGE_STATEMENT, values), accountId, cost, calls, null);
    }
    for (let attempt = 1; ; attempt++) {
      try {
        const prepared = (values: unknown[]) => preparedQuery<ChargeRow>(this.db, 'phone_filter_charge_v3', CHARGE_STATEMENT, values);
        return await this.chargeOnce(prepared, accountId, cost, calls, options.deadline ?? null);
      } catch (error) {
        if (hasSqlState(error, LOCK_NOT_AVAILABLE)) return { written: new Map(), duplicates: new Set(), late: true, refusedBy: null };
        const runAgain = isUniqueViolation(error, IDEMPOTENT_CHARGE_INDEX) || ROLLED_BACK_BY_CONFLICT.some((code) => hasSqlState(error, code));
        if (attempt >= 3 || !runAgain) throw error;
      }
    }
  }

  private async chargeOnce(
    query: (values: unknown[]) => Promise<ChargeRow[]>,
    accountId: string,
    cost: number,
    calls: ChargeDetails[],
    deadline: Date | null,
  ): Promise<ChargeOutcome> {
    const rows = await query(
      [
        accountId,
        cost,
        calls.map((c) => c.reference),
        calls.map((c) => c.phone),
        calls.map((c) => c.source),
        calls.map((c) => c.idempotencyKeyId ?? null),
        calls.map((c) => c.settled === true),
        deadline,
        calls.map((c) => (c.settled && c.answeredBy ? JSON.stringify(c.answeredBy) : null)),
        // The time of the charge, read once for the statement: its day for the cap, its rows' times.
        this.clock.date(),
      ],
    );
    if (rows.some((row) => row.late)) return { written: new Map(), duplicates: new Set(), late: true, refusedBy: null };
    const written = new Map<string, LedgerWrite>();
    const duplicates = new Set<string>();
    const refused = new Map<string, ChargeRefusal>();
    for (const row of rows) {
      if (row.id !== null) written.set(row.reference, { id: String(row.id), balanceAfter: Number(row.balance_after) });
      else if (row.duplicate) duplicates.add(row.reference);
      else refused.set(row.reference, row.over_cap ? 'spending_limit' : 'balance');
    }
    return { written, duplicates, refusedBy: refused.values().next().value ?? null, refused };
  }

  /**
   * A bulk job's reservation: the same conditional debit as `charge`, but settled at once and run
   * inside the caller's transaction (the job and its entries commit with it, or nothing does).
   * Settled, it is never taken for an abandoned call by the sweeper; the job gives back what it did
   * not use with `refundPart`. Undefined when the balance or today's allowance (daily cap) is short.
   */
  async reserve(
    accountId: string,
    amount: number,
    details: { reference: string; source: string | null; reason: string },
  ): Promise<LedgerWrite | undefined> {
    const rows: Array<{ id: string; balance_after: string }> = await joinedTransaction(this.txHost).query(
      `WITH debit AS (
         UPDATE accounts a SET balance = a.balance - $2, spent_today = ${SPENT_TODAY('$6')} + $2, spent_day = ${CHARGE_DAY('$6')}
          WHERE a.id = $1 AND a.balance >= $2 AND COALESCE(${SPENT_TODAY('$6')} + $2 <= ${DAILY_CAP}, true)
         RETURNING a.id, a.balance),
       ${lowBalanceAlert('debit', 'debit.balance + $2::bigint', 'debit.balance')}
       INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, source, reason, created_at, settled_at)
       SELECT id, 'CHARGE', -$2::bigint, balance, $3, $4, $5, $6::timestamptz, $6::timestamptz FROM debit
       RETURNING id, balance_after`,
      // $6: the time of the reservation, read once from the Clock (its day for the cap, its row's times).
      [accountId, amount, details.reference, details.source, details.reason, this.clock.date()],
    );
    return rows[0] && { id: String(rows[0].id), balanceAfter: Number(rows[0].balance_after) };
  }

  /**
   * A retry of an Idempotency-Key is about to be answered again from the key's settled charge, without
   * a new charge (IdempotencyService asks): marks the charge answered, so that no late give-back (CreditsRepository.refundLanded) refunds it after.
   * The row lock orders this with a refund of the same charge: false when the charge was refunded
   * first (the refund clears its key id), and then the retry must not be answered for free.
   */
  async markKeyChargeAnswered(keyId: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `WITH marked AS (
         UPDATE ledger_entries c SET answered_at = COALESCE(c.answered_at, now())
          WHERE c.idempotency_key_id = $1 AND c.type = 'CHARGE' AND c.settled_at IS NOT NULL
          RETURNING 1)
       SELECT 1 FROM marked`,
      [keyId],
    );
    return rows.length > 0;
  }

  /** What has been refunded of each charge (a bulk job's reservation), by charge id; a charge with no refund is absent. */
  async refundedOf(chargeIds: string[]): Promise<Map<string, number>> {
    if (chargeIds.length === 0) return new Map();
    const rows: Array<{ refund_of: string; amount: string }> = await this.db.query(
      `SELECT refund_of::text, sum(amount) AS amount FROM ledger_entries WHERE refund_of = ANY($1::bigint[]) GROUP BY refund_of`,
      [chargeIds],
    );
    return new Map(rows.map((row) => [row.refund_of, Number(row.amount)]));
  }

  /**
   * REFUND of part of a charge (at most all of it), exactly once per charge: like `refund`, one
   * statement, and a second attempt fails as a whole on the unique refund_of. False when the charge
   * was already refunded (or is unknown, or smaller than the amount).
   */
  async refundPart(
    chargeId: string,
    amount: number,
    details: { reference: string; reason: string },
  ): Promise<boolean> {
    try {
      const rows: unknown[] = await this.txHost.tx.query(
        `WITH charge AS (
           SELECT id, account_id, phone, source, created_at FROM ledger_entries
            WHERE id = $1 AND type = 'CHARGE' AND -amount >= $2
              AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.refund_of = $1)),
         credit AS (
           UPDATE accounts a SET balance = a.balance + $2, ${GIVE_BACK('$2')} FROM charge
            WHERE a.id = charge.account_id RETURNING a.id AS account_id, a.balance)
         INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, refund_of, phone, source, reason, settled_at)
         SELECT credit.account_id, 'REFUND', $2, credit.balance, $3, charge.id, charge.phone, charge.source, $4, now()
           FROM credit, charge
         RETURNING id`,
        [chargeId, amount, details.reference, details.reason],
      );
      return rows.length > 0;
    } catch (error) {
      if (isUniqueViolation(error)) return false;
      throw error;
    }
  }

  /**
   * Calls that answered: their charges are final, each with its provenance (which provider answered each
   * check and when) written by the same statement. Returns the ids settled by this statement; a charge
   * missing from it was refunded meanwhile (by the sweep, should a call outlive its bound). The
   * provenance is our own JSON (JSON.stringify of provider ids and ISO times): it cannot fail the cast.
   */
  async settleMany(unordered: SettleRequest[]): Promise<Set<string>> {
    // Rows locked in id order, as the sweep's refundAbandoned locks them: the two never deadlock.
    const settles = [...unordered].sort((a, b) => (BigInt(a.chargeId) < BigInt(b.chargeId) ? -1 : BigInt(a.chargeId) > BigInt(b.chargeId) ? 1 : 0));
    const rows = await preparedQuery<{ id: string }>(
      this.db,
      'phone_filter_settle_v2',
      `UPDATE ledger_entries l SET settled_at = now(), answered_by = s.answered_by
         FROM unnest($1::bigint[], $2::json[]) AS s(id, answered_by)
        WHERE l.id = s.id AND l.settled_at IS NULL AND ${ASYNC_COMMIT} RETURNING l.id`,
      [settles.map((settle) => settle.chargeId), settles.map((settle) => (settle.answeredBy ? JSON.stringify(settle.answeredBy) : null))],
    );
    return new Set(rows.map((row) => String(row.id)));
  }


  /**
   * REFUND of one charge, exactly once: the credit, the REFUND row (unique refund_of) and the
   * settling of the charge are one statement, so a second refund of the same charge (a retry, a
   * sweep on another instance) fails as a whole on the unique constraint and changes nothing. The
   * same statement clears the charge's Idempotency-Key id: the key may then be charged again.
   * Returns the credits given back, or undefined when the charge was already refunded or settled.
   */
  async refund(chargeId: string, reason: string): Promise<number | undefined> {
    return this.refundWhere((text, values) => this.db.query(text, values), `c.id = $1 AND c.settled_at IS NULL`, chargeId, reason);
  }

  /**
   * The outcome of an answered call whose settle failed (its reply may be lost with the settle
   * committed), decided on a fresh connection (onFreshConnection): the charge refunded when it is not
   * settled ('refunded', with the credits given back), 'answered' when it is settled and not refunded
   * (the settle did commit: the call is a 200), 'refunded' with 0 when it was refunded already.
   * Throws when the database cannot be asked: the outcome is still unknown.
   */
  async resolveUnanswered(chargeId: string, reason: string, timeoutMs: number): Promise<{ outcome: 'answered' | 'refunded'; given: number }> {
    return onFreshConnection(this.db, timeoutMs, async (query) => {
      const given = await this.refundWhere(query, `c.id = $1 AND c.settled_at IS NULL`, chargeId, reason);
      if (given !== undefined) return { outcome: 'refunded', given };
      return { outcome: (await query(IS_ANSWERED, [chargeId])).length > 0 ? 'answered' : 'refunded', given: 0 };
    });
  }

  /**
   * REFUND of a charge whose call was answered 503 while its settle's outcome was unknown: settled or
   * not (the settle may have committed), exactly once, unless a retry was answered from it since
   * (`answered_at`): that call is a 200. On a fresh connection, like `resolveUnanswered`.
   */
  async refundAnswered503(chargeId: string, reason: string, timeoutMs: number): Promise<number | undefined> {
    return onFreshConnection(this.db, timeoutMs, (query) => this.refundWhere(query, `c.id = $1 AND c.answered_at IS NULL`, chargeId, reason, 'durable'));
  }

  /**
   * REFUND of many abandoned charges (never settled, of any accounts) in one statement, by the rules of
   * `refund` applied to each: one REFUND row per charge (unique refund_of), the charge settled and its
   * Idempotency-Key id cleared, each account credited once with the sum, its refund rows' balances in
   * charge order, and today's allowance given back for the charges of the account's spent_day. Should
   * any of them be refunded or settled meanwhile, the statement fails as a whole on the unique
   * constraint (or re-checks the locked row) and changes nothing: the caller then refunds one by one.
   * Returns the credits given back and the charges refunded.
   */
  async refundAbandoned(chargeIds: string[], reason: string): Promise<{ refunded: number; credits: number }> {
    const rows: Array<{ refunded: string; credits: string }> = await this.db.query(
      `WITH charge AS (
         SELECT c.id, c.account_id, -c.amount AS amount, c.phone, c.source, (c.created_at AT TIME ZONE 'UTC')::date AS day FROM ledger_entries c
          WHERE c.id = ANY($1::bigint[]) AND c.settled_at IS NULL AND c.type = 'CHARGE' AND ${ASYNC_COMMIT}
            AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.refund_of = c.id)
          ORDER BY c.id
            FOR UPDATE OF c),
       credit AS (
         UPDATE accounts a SET balance = a.balance + p.amount,
                spent_today = greatest(a.spent_today - COALESCE((SELECT sum(c.amount) FROM charge c WHERE c.account_id = a.id AND c.day = a.spent_day), 0), 0)
           FROM (SELECT account_id, sum(amount) AS amount FROM charge GROUP BY account_id) p
          WHERE a.id = p.account_id RETURNING a.id AS account_id, a.balance - p.amount AS balance_before),
       settled AS (
         UPDATE ledger_entries SET settled_at = now(), idempotency_key_id = NULL WHERE id IN (SELECT id FROM charge) RETURNING id),
       written AS (
         INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, refund_of, phone, source, reason, settled_at)
         SELECT charge.account_id, 'REFUND', charge.amount,
                credit.balance_before + sum(charge.amount) OVER (PARTITION BY charge.account_id ORDER BY charge.id),
                'refund:' || charge.id, charge.id, charge.phone, charge.source, $2, now()
           FROM charge JOIN credit ON credit.account_id = charge.account_id JOIN settled ON settled.id = charge.id
         RETURNING amount)
       SELECT count(*) AS refunded, COALESCE(sum(amount), 0) AS credits FROM written`,
      [chargeIds, reason],
    );
    return { refunded: Number(rows[0].refunded), credits: Number(rows[0].credits) };
  }

  /**
   * REFUND of the charge with this reference, settled or not, exactly once like `refund`: for a charge
   * that landed after its call was answered 503 (its statement outlived the wait, or its reply was
   * lost), which may have been written settled. Undefined when there is none, or it is refunded already,
   * or a retry was answered from it (`answered_at`, IdempotencyRepository.answerAgain): that call is a 200.
   */
  async refundLanded(reference: string, reason: string): Promise<number | undefined> {
    return this.refundWhere((text, values) => this.db.query(text, values), `c.reference = $1 AND c.answered_at IS NULL`, reference, reason, 'durable');
  }

  /**
   * The charge row is locked (FOR UPDATE) before anything is decided: a settle, a refund or a retry's
   * answerAgain that changed it meanwhile makes PostgreSQL re-check `condition` on the row as committed
   * (READ COMMITTED re-evaluates the WHERE of a locked row), so a charge settled while this statement
   * waited is not refunded. Without the lock the charge was picked from the snapshot, and the later
   * UPDATE of that row went ahead once the settle committed: an answered call refunded.
   */
  private async refundWhere(query: FreshQuery, condition: string, target: string, reason: string, commit: RefundCommit = 'async'): Promise<number | undefined> {
    try {
      const rows = await query<{ amount: string }>(refundStatement(condition, commit), [target, reason]);
      return rows[0] && Number(rows[0].amount);
    } catch (error) {
      if (isUniqueViolation(error)) return undefined;
      throw error;
    }
  }

  /**
   * Whether the server process `pid` (backendOf) may still commit what it was running: it is there and
   * not idle. An idle one has sent ReadyForQuery outside a transaction (its statement is over, committed
   * or not) and may stay connected for hours when its client vanished without a word.
   */
  async backendRunning(pid: number): Promise<boolean> {
    const rows: Array<{ running: boolean }> = await this.db.query(
      `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state IS DISTINCT FROM 'idle') AS running`,
      [pid],
    );
    return rows[0]?.running === true;
  }

  /** Charges taken before `chargedBefore` that were neither settled nor refunded: their calls never answered. */
  async findAbandonedCharges(chargedBefore: Date, limit: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.db.query(
      `SELECT id FROM ledger_entries
        WHERE type = 'CHARGE' AND settled_at IS NULL AND created_at < $1
        ORDER BY created_at LIMIT $2`,
      [chargedBefore, limit],
    );
    return rows.map((row) => row.id);
  }

  /** Newest first, keyset-paginated on the id. */
  async page(accountId: string, limit: number, beforeId: string | undefined): Promise<LedgerRow[]> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      // An owner's page: the shape of src/common/keyset-page.ts, on ledger_entries_account_id_id_idx.
      `SELECT id, type, amount, balance_after, phone, source, answered_by, created_at FROM ledger_entries
        WHERE account_id = ANY(ARRAY[$1::uuid]) AND id < COALESCE($2::bigint, ${NO_KEY_ABOVE})
        ORDER BY account_id, id DESC LIMIT $3`,
      [accountId, beforeId ?? null, limit],
    );
    return rows.map((row) => ({
      id: String(row.id),
      type: row.type as LedgerEntryType,
      amount: Number(row.amount),
      balanceAfter: Number(row.balance_after),
      phone: row.phone as string | null,
      source: row.source as string | null,
      answeredBy: (row.answered_by as StoredProvenance | null) ?? null,
      createdAt: row.created_at as Date,
    }));
  }

  /** Balance, cap and today's charges, to tell why a charge was refused (and for quotes). */
  async spendingState(accountId: string): Promise<SpendingState | undefined> {
    const rows: Array<{ balance: string; cap: string | null; spent: string }> = await this.db.query(
      `SELECT a.balance, ${DAILY_CAP} AS cap, ${SPENT_TODAY('$2')} AS spent FROM accounts a WHERE a.id = $1`,
      [accountId, this.clock.date()],
    );
    if (!rows[0]) return undefined;
    return { balance: Number(rows[0].balance), dailyCreditLimit: rows[0].cap === null ? null : Number(rows[0].cap), spentToday: Number(rows[0].spent) };
  }

  async balance(accountId: string): Promise<number | undefined> {
    const rows: Array<{ balance: string }> = await this.db.query(`SELECT balance FROM accounts WHERE id = $1`, [accountId]);
    return rows[0] && Number(rows[0].balance);
  }

  /** The invariant the whole design protects: balance = sum of the ledger. */
  async ledgerSum(accountId: string): Promise<number> {
    const rows: Array<{ sum: string }> = await this.db.query(
      `SELECT COALESCE(SUM(amount), 0) AS sum FROM ledger_entries WHERE account_id = $1`,
      [accountId],
    );
    return Number(rows[0].sum);
  }
}

/**
 * How a refund commits. 'async' (synchronous_commit off) only where a refund lost in a PostgreSQL crash
 * leaves its charge unsettled, so the abandoned-charges sweep refunds it again; 'durable' where the charge
 * may be settled already (a 503 whose settle's outcome was unknown, a charge that landed after its 503):
 * the sweep skips settled charges, so such a refund lost in a crash would leave the 503 charged.
 */
export type RefundCommit = 'async' | 'durable';

/** The one refund statement (see CreditsRepository.refundWhere); `condition` picks the charge `c` by $1. */
export function refundStatement(condition: string, commit: RefundCommit): string {
  return `WITH charge AS (
           SELECT c.id, c.account_id, -c.amount AS amount, c.phone, c.source, c.created_at FROM ledger_entries c
            WHERE ${condition} AND c.type = 'CHARGE' AND ${commit === 'async' ? ASYNC_COMMIT : 'TRUE'}
              AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.refund_of = c.id)
            FOR UPDATE OF c),
         credit AS (
           UPDATE accounts a SET balance = a.balance + charge.amount, ${GIVE_BACK('charge.amount')} FROM charge
            WHERE a.id = charge.account_id RETURNING a.id AS account_id, a.balance),
         settled AS (
           UPDATE ledger_entries SET settled_at = now(), idempotency_key_id = NULL, answered_by = NULL WHERE id IN (SELECT id FROM charge) RETURNING id)
         INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, refund_of, phone, source, reason, settled_at)
         SELECT credit.account_id, 'REFUND', charge.amount, credit.balance, 'refund:' || charge.id, charge.id,
                charge.phone, charge.source, $2, now()
           FROM credit, charge, settled
         RETURNING amount`;
}
