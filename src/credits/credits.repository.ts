import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { LedgerEntryType } from './ledger-entry.entity';

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
}

export interface ChargeOutcome {
  /** The charges written, by reference. */
  written: Map<string, LedgerWrite>;
  /** References not charged because their Idempotency-Key already has a charge. */
  duplicates: Set<string>;
}

export interface LedgerRow {
  id: string;
  type: LedgerEntryType;
  amount: number;
  balanceAfter: number;
  phone: string | null;
  source: string | null;
  createdAt: Date;
}

const UNIQUE_VIOLATION = '23505';
const IDEMPOTENT_CHARGE_INDEX = 'ledger_entries_idempotency_key_unique';

/**
 * Charge, settle and refund commit asynchronously (`synchronous_commit = off` for that statement's
 * transaction only). The account row is locked until commit, so a synchronous commit makes every
 * call of one account wait for the previous WAL flush: ~600 charges/s on one account here, ~4,900
 * without. What a Postgres crash can lose is the last fraction of a second of these commits, and each
 * loss favours the customer while keeping balance = ledger sum: a lost charge is a free call; a lost
 * settle or refund leaves the charge unsettled, and the sweep refunds it. A crash of the service
 * itself loses nothing (Postgres has the rows). Top-ups and adjustments stay synchronous.
 */
const ASYNC_COMMIT = `set_config('synchronous_commit', 'off', true) IS NOT NULL`;

/**
 * Every change of a balance, as ONE statement that moves accounts.balance and appends the ledger
 * row together: atomic without an explicit transaction, and it cannot overdraw (the WHERE clause
 * and the CHECK constraint) nor be written twice (the unique reference).
 */
@Injectable()
export class CreditsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** TOPUP (+) or ADJUSTMENT (±). Undefined when the account is missing or would go below zero. */
  async credit(
    accountId: string,
    type: 'TOPUP' | 'ADJUSTMENT',
    amount: number,
    details: { reference: string; reason: string | null; actor: string | null },
  ): Promise<LedgerWrite | undefined> {
    const rows: Array<{ id: string; balance_after: string }> = await this.db.query(
      `WITH moved AS (
         UPDATE accounts SET balance = balance + $2 WHERE id = $1 AND balance + $2 >= 0 RETURNING id, balance)
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
   * statement runs again with a fresh snapshot, which then sees that charge and skips the call.
   *
   * A call whose answer is already known (`settled`) is written settled: final at once, never taken
   * by the sweep. The others stay unsettled until their calls answer (settle) or are refunded.
   * Returns the written charges by reference; a reference in neither result was refused (balance).
   * With `transaction`, the statement runs in the caller's transaction (the caller's rows commit with
   * the charges, or nothing does); a failed statement is then not re-run here, since it aborted the
   * caller's transaction (such callers charge without Idempotency-Keys, so the re-run never applies).
   */
  async chargeMany(accountId: string, cost: number, calls: ChargeDetails[], transaction?: EntityManager): Promise<ChargeOutcome> {
    if (transaction) return this.chargeOnce(transaction, accountId, cost, calls);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.chargeOnce(this.db.manager, accountId, cost, calls);
      } catch (error) {
        if (attempt >= 3 || !isUniqueViolation(error, IDEMPOTENT_CHARGE_INDEX)) throw error;
      }
    }
  }

  private async chargeOnce(db: EntityManager, accountId: string, cost: number, calls: ChargeDetails[]): Promise<ChargeOutcome> {
    const rows: Array<{ reference: string; id: string | null; balance_after: string | null; duplicate: boolean }> = await db.query(
      `WITH account AS (
         SELECT balance FROM accounts WHERE id = $1 AND ${ASYNC_COMMIT} FOR NO KEY UPDATE),
       call AS (
         SELECT * FROM unnest($3::text[], $4::text[], $5::text[], $6::uuid[], $7::boolean[]) WITH ORDINALITY
                    AS c(reference, phone, source, key_id, settled, ordinal)),
       eligible AS (
         SELECT c.*, row_number() OVER (ORDER BY c.ordinal) AS rank FROM call c
          WHERE c.key_id IS NULL
             OR (NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.idempotency_key_id = c.key_id)
                 AND NOT EXISTS (SELECT 1 FROM call d WHERE d.key_id = c.key_id AND d.ordinal < c.ordinal))),
       accepted AS (
         SELECT e.*, account.balance - e.rank * $2::bigint AS balance_after
           FROM account, eligible e WHERE e.rank * $2::bigint <= account.balance),
       debit AS (
         UPDATE accounts SET balance = (SELECT balance FROM account) - $2::bigint * (SELECT count(*) FROM accepted)
          WHERE id = $1 AND EXISTS (SELECT 1 FROM accepted) RETURNING id),
       written AS (
         INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, phone, source, idempotency_key_id, settled_at)
         SELECT debit.id, 'CHARGE', -$2::bigint, a.balance_after, a.reference, a.phone, a.source, a.key_id,
                CASE WHEN a.settled THEN now() END
           FROM accepted a, debit ORDER BY a.ordinal
         RETURNING id, reference, balance_after)
       SELECT c.reference, w.id, w.balance_after, e.reference IS NULL AS duplicate
         FROM call c LEFT JOIN written w ON w.reference = c.reference LEFT JOIN eligible e ON e.reference = c.reference`,
      [
        accountId,
        cost,
        calls.map((c) => c.reference),
        calls.map((c) => c.phone),
        calls.map((c) => c.source),
        calls.map((c) => c.idempotencyKeyId ?? null),
        calls.map((c) => c.settled === true),
      ],
    );
    const written = new Map<string, LedgerWrite>();
    const duplicates = new Set<string>();
    for (const row of rows) {
      if (row.id !== null) written.set(row.reference, { id: String(row.id), balanceAfter: Number(row.balance_after) });
      else if (row.duplicate) duplicates.add(row.reference);
    }
    return { written, duplicates };
  }

  /**
   * A bulk job's reservation: the same conditional debit as `charge`, but settled at once and run
   * inside the caller's transaction (the job and its entries commit with it, or nothing does).
   * Settled, it is never taken for an abandoned call by the sweeper; the job gives back what it did
   * not use with `refundPart`. Undefined when the balance is short.
   */
  async reserve(
    transaction: EntityManager,
    accountId: string,
    amount: number,
    details: { reference: string; source: string | null; reason: string },
  ): Promise<LedgerWrite | undefined> {
    const rows: Array<{ id: string; balance_after: string }> = await transaction.query(
      `WITH debit AS (
         UPDATE accounts SET balance = balance - $2 WHERE id = $1 AND balance >= $2 RETURNING id, balance)
       INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, source, reason, settled_at)
       SELECT id, 'CHARGE', -$2::bigint, balance, $3, $4, $5, now() FROM debit
       RETURNING id, balance_after`,
      [accountId, amount, details.reference, details.source, details.reason],
    );
    return rows[0] && { id: String(rows[0].id), balanceAfter: Number(rows[0].balance_after) };
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
    transaction?: EntityManager,
  ): Promise<boolean> {
    try {
      const rows: unknown[] = await (transaction ?? this.db).query(
        `WITH charge AS (
           SELECT id, account_id, phone, source FROM ledger_entries
            WHERE id = $1 AND type = 'CHARGE' AND -amount >= $2
              AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.refund_of = $1)),
         credit AS (
           UPDATE accounts a SET balance = a.balance + $2 FROM charge
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
   * Calls that answered: their charges are final. Returns the ids settled by this statement; a charge
   * missing from it was refunded meanwhile (by the sweep, should a call outlive its bound).
   */
  async settleMany(chargeIds: string[]): Promise<Set<string>> {
    const rows: Array<{ id: string }> = await this.db.query(
      // A SELECT around the UPDATE: TypeORM answers a bare UPDATE with [rows, count], not rows.
      `WITH settled AS (
         UPDATE ledger_entries SET settled_at = now() WHERE id = ANY($1::bigint[]) AND settled_at IS NULL AND ${ASYNC_COMMIT} RETURNING id)
       SELECT id FROM settled`,
      [chargeIds],
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
    return this.refundWhere(`c.id = $1 AND c.settled_at IS NULL`, chargeId, reason);
  }

  /**
   * REFUND of the charge with this reference, settled or not, exactly once like `refund`: for a charge
   * that landed after its call was answered 503 (its statement outlived the wait, or its reply was
   * lost), which may have been written settled. Undefined when there is none, or it is refunded already.
   */
  async refundLanded(reference: string, reason: string): Promise<number | undefined> {
    return this.refundWhere(`c.reference = $1`, reference, reason);
  }

  private async refundWhere(condition: string, target: string, reason: string): Promise<number | undefined> {
    try {
      const rows: Array<{ amount: string }> = await this.db.query(
        `WITH charge AS (
           SELECT c.id, c.account_id, -c.amount AS amount, c.phone, c.source FROM ledger_entries c
            WHERE ${condition} AND c.type = 'CHARGE' AND ${ASYNC_COMMIT}
              AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.refund_of = c.id)),
         credit AS (
           UPDATE accounts a SET balance = a.balance + charge.amount FROM charge
            WHERE a.id = charge.account_id RETURNING a.id AS account_id, a.balance),
         settled AS (
           UPDATE ledger_entries SET settled_at = now(), idempotency_key_id = NULL WHERE id IN (SELECT id FROM charge) RETURNING id)
         INSERT INTO ledger_entries (account_id, type, amount, balance_after, reference, refund_of, phone, source, reason, settled_at)
         SELECT credit.account_id, 'REFUND', charge.amount, credit.balance, 'refund:' || charge.id, charge.id,
                charge.phone, charge.source, $2, now()
           FROM credit, charge, settled
         RETURNING amount`,
        [target, reason],
      );
      return rows[0] && Number(rows[0].amount);
    } catch (error) {
      if (isUniqueViolation(error)) return undefined;
      throw error;
    }
  }

  /** Whether the charge is settled and not refunded: its call answered. */
  async isAnswered(chargeId: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `SELECT 1 FROM ledger_entries c
        WHERE c.id = $1 AND c.type = 'CHARGE' AND c.settled_at IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM ledger_entries r WHERE r.refund_of = c.id)`,
      [chargeId],
    );
    return rows.length > 0;
  }

  /** Charges older than the bound that were neither settled nor refunded: their calls never answered. */
  async findAbandonedCharges(olderThanSeconds: number, limit: number): Promise<string[]> {
    const rows: Array<{ id: string }> = await this.db.query(
      `SELECT id FROM ledger_entries
        WHERE type = 'CHARGE' AND settled_at IS NULL AND created_at < now() - make_interval(secs => $1)
        ORDER BY created_at LIMIT $2`,
      [olderThanSeconds, limit],
    );
    return rows.map((row) => row.id);
  }

  /** Newest first, keyset-paginated on the id. */
  async page(accountId: string, limit: number, beforeId: string | undefined): Promise<LedgerRow[]> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      `SELECT id, type, amount, balance_after, phone, source, created_at FROM ledger_entries
        WHERE account_id = $1 AND ($2::bigint IS NULL OR id < $2::bigint)
        ORDER BY id DESC LIMIT $3`,
      [accountId, beforeId ?? null, limit],
    );
    return rows.map((row) => ({
      id: String(row.id),
      type: row.type as LedgerEntryType,
      amount: Number(row.amount),
      balanceAfter: Number(row.balance_after),
      phone: row.phone as string | null,
      source: row.source as string | null,
      createdAt: row.created_at as Date,
    }));
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

function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const failure = error as { code?: string; constraint?: string; driverError?: { code?: string; constraint?: string } };
  const driver = failure.driverError ?? failure;
  return driver.code === UNIQUE_VIOLATION && (constraint === undefined || driver.constraint === constraint);
}
