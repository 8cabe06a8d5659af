import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, QueryFailedError } from 'typeorm';
import { AppError } from '../common/errors';
import { Clock } from '../common/clock';
import { KEY_LIFE_HOURS } from '../common/idempotency-key';
import { erasedSince, numberWrites } from '../erasures/number-erasures';

/** A key already in use, with what the ledger says about its charge. */
export interface StoredIdempotentCall {
  /** The key's id for its 24 h life, carried by its charge. */
  id: string;
  requestHash: string;
  status: 'in_progress' | 'completed';
  /** The answer as first sent, byte for byte (completed keys). */
  responseBody: string | null;
  /** The key's charge: none (not charged yet, or refunded), still unsettled, or settled (answered). */
  charge: 'none' | 'unsettled' | 'settled';
  /** Whether the attempt holding the key took it longer ago than the bound it was asked with. */
  claimedLongAgo: boolean;
  /** What the call holding the key was charged for (IdempotencyService.run's `context`); null before it was stored. */
  context: unknown;
}

/** One attempt at a key: the key's id (carried by its charge) and the attempt's own token. */
export interface KeyAttempt {
  id: string;
  attempt: string;
}

/**
 * A key's life and an attempt's hold are rules about time: each statement takes the time from the
 * Clock (one reading, a parameter) and writes the times those rules compare (created_at, claimed_at)
 * with it, so that a test ages a key by moving the clock.
 */
@Injectable()
export class IdempotencyRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly clock: Clock,
  ) {}

  /**
   * Takes the key for a new call: it was unknown, or its 24 h have passed (then it gets a new id, so
   * its old charge does not count against the new call). The key's id and this attempt's token, or
   * undefined when it is in use. A key of a number erased since the claim's transaction began is taken
   * as an erasure leaves one (docs/privacy.md, "Erasure"): no hash, the erased request hash, so its call
   * is answered to this caller but never stored, and a retry gets 409.
   */
  async claim(accountId: string, key: string, requestHash: string, context: unknown = null, phoneHash: string | null = null): Promise<KeyAttempt | undefined> {
    const rows: Array<{ id: string; attempt: string }> = await this.db.transaction(async (em) => {
      // (A failure of the transaction itself, not of a statement, is a lost connection: see lostTransaction.)
      if (phoneHash !== null) await numberWrites.guard(em);
      return em.query(
        `WITH erased AS (SELECT $5::text IS NOT NULL AND ${erasedSince('$5::text')} AS yes)
         INSERT INTO idempotency_keys (account_id, key, request_hash, phone_hash, status, attempt, answer_context, created_at, claimed_at)
         SELECT $1, $2, CASE WHEN erased.yes THEN $7 ELSE $3 END, CASE WHEN erased.yes THEN NULL ELSE $5 END, 'in_progress', gen_random_uuid(), $4::jsonb, $6, $6
           FROM erased
         ON CONFLICT (account_id, key) DO UPDATE
         SET id = gen_random_uuid(), attempt = gen_random_uuid(), request_hash = EXCLUDED.request_hash, phone_hash = EXCLUDED.phone_hash, status = 'in_progress',
             answer_context = EXCLUDED.answer_context,
             response_status = NULL, response_body = NULL, created_at = $6, claimed_at = $6, completed_at = NULL
         WHERE idempotency_keys.created_at < $6::timestamptz - interval '${KEY_LIFE_HOURS} hours'
         RETURNING id, attempt`,
        [accountId, key, requestHash, JSON.stringify(context), phoneHash, this.clock.date(), ERASED_REQUEST_HASH],
      );
    }).catch(lostTransaction);
    return rows[0] && { id: rows[0].id, attempt: rows[0].attempt };
  }

  /** The key as stored, and the state of its charge in the ledger. */
  async find(accountId: string, key: string, claimedBeforeSeconds: number): Promise<StoredIdempotentCall | undefined> {
    const rows: Array<{
      id: string;
      request_hash: string;
      status: 'in_progress' | 'completed';
      response_body: string | null;
      charge: 'none' | 'unsettled' | 'settled';
      claimed_long_ago: boolean;
      answer_context: unknown;
    }> = await this.db.query(
      `SELECT k.id, k.request_hash, k.status, k.response_body, k.answer_context,
              CASE WHEN c.id IS NULL THEN 'none' WHEN c.settled_at IS NULL THEN 'unsettled' ELSE 'settled' END AS charge,
              k.claimed_at < $4::timestamptz - make_interval(secs => $3) AS claimed_long_ago
         FROM idempotency_keys k LEFT JOIN ledger_entries c ON c.idempotency_key_id = k.id
        WHERE k.account_id = $1 AND k.key = $2`,
      [accountId, key, claimedBeforeSeconds, this.clock.date()],
    );
    const row = rows[0];
    return (
      row && {
        id: row.id,
        requestHash: row.request_hash,
        status: row.status,
        responseBody: row.response_body,
        charge: row.charge,
        claimedLongAgo: row.claimed_long_ago,
        context: row.answer_context,
      }
    );
  }

  /**
   * A retry takes over a key whose attempt never charged (it died before, or its charge was refunded)
   * and took the key longer ago than the bound. The key keeps its id and its 24 h, and gets a new
   * attempt token: the attempt it replaces can no longer free it. Keys stored before attempts had
   * tokens are never taken over (see migrations/1764100000100-ChargeAttempts.ts). The new token when
   * taken: of two retries at once, one takes it.
   */
  async takeOver(keyId: string, claimedBeforeSeconds: number, context: unknown = null): Promise<string | undefined> {
    const rows: Array<{ attempt: string }> = await this.db.query(
      // A SELECT around the UPDATE: TypeORM answers a bare UPDATE with [rows, count], not rows.
      `WITH taken AS (
         UPDATE idempotency_keys k SET claimed_at = $4, attempt = gen_random_uuid(), answer_context = $3::jsonb
          WHERE k.id = $1 AND k.status = 'in_progress' AND k.attempt IS NOT NULL
            AND k.claimed_at < $4::timestamptz - make_interval(secs => $2)
            AND NOT EXISTS (SELECT 1 FROM ledger_entries c WHERE c.idempotency_key_id = k.id)
          RETURNING k.attempt)
       SELECT attempt FROM taken`,
      [keyId, claimedBeforeSeconds, JSON.stringify(context), this.clock.date()],
    );
    return rows[0]?.attempt;
  }

  /**
   * Stores the answer of the key's call, unless one is stored already (a retry that recomputed it at
   * the same time): returns the answer that is stored now, which every later retry replays. Any
   * attempt holding the key's charge may store it (the charge is the proof). Null when the key was
   * erased (its request hash is the erased one): a call that began before an erasure never stores its
   * answer after it, checked in the same statement. Undefined when the key row is gone: it cannot be
   * while the key has a charge (the foreign key), so the caller says so loudly.
   */
  async complete(keyId: string, responseBody: string): Promise<string | null | undefined> {
    const rows: Array<{ response_body: string | null }> = await this.db.query(
      `WITH stored AS (
         UPDATE idempotency_keys SET status = 'completed', response_status = 200, response_body = $2, completed_at = now()
          WHERE id = $1 AND status = 'in_progress' AND request_hash <> $3 RETURNING response_body)
       SELECT response_body FROM stored
       UNION ALL
       SELECT CASE WHEN request_hash = $3 THEN NULL ELSE response_body END FROM idempotency_keys
        WHERE id = $1 AND (status = 'completed' OR request_hash = $3) AND NOT EXISTS (SELECT 1 FROM stored)`,
      [keyId, responseBody, ERASED_REQUEST_HASH],
    );
    if (rows[0]) return rows[0].response_body;
    // Both stored at once: this statement's snapshot predates the other's commit. Read it now.
    const stored: Array<{ response_body: string | null }> = await this.db.query(
      `SELECT CASE WHEN request_hash = $2 THEN NULL ELSE response_body END AS response_body FROM idempotency_keys
        WHERE id = $1 AND (status = 'completed' OR request_hash = $2)`,
      [keyId, ERASED_REQUEST_HASH],
    );
    return stored[0]?.response_body;
  }

  /**
   * Frees the key of a call that failed, if this attempt still holds it (a retry may have taken it
   * over) and the ledger holds no charge for it (a refund still to come). The row is locked first: a
   * charge naming the key holds a share lock on it until it commits, so the DELETE, which takes its
   * snapshot after the lock is granted, sees a charge committed meanwhile and keeps the key; a charge
   * started after the lock fails on the foreign key once the key is gone. (The foreign key deletes
   * nothing on its own since the ledger lets go of keys past their life: ON DELETE SET NULL.)
   */
  async release(key: KeyAttempt): Promise<void> {
    await this.db.transaction(async (em) => {
      const held: unknown[] = await em.query(
        `SELECT 1 FROM idempotency_keys WHERE id = $1 AND attempt = $2 AND status = 'in_progress' FOR UPDATE`,
        [key.id, key.attempt],
      );
      if (held.length === 0) return;
      await em.query(
        `DELETE FROM idempotency_keys k
          WHERE k.id = $1 AND k.attempt = $2 AND k.status = 'in_progress'
            AND NOT EXISTS (SELECT 1 FROM ledger_entries c WHERE c.idempotency_key_id = k.id)`,
        [key.id, key.attempt],
      );
    });
  }

  /**
   * Retention: up to `limit` keys created before `before` (their life and its grace over), charged or
   * not (a charge stops naming its key: ON DELETE SET NULL). Rows another instance is deleting are skipped.
   */
  async deleteCreatedBefore(before: Date, limit: number): Promise<number> {
    const rows: Array<{ n: number }> = await this.db.query(
      `WITH gone AS (
         DELETE FROM idempotency_keys WHERE ctid IN (
           SELECT ctid FROM idempotency_keys WHERE created_at < $1
            LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [before, limit],
    );
    return rows[0].n;
  }

  /**
   * Erasure of the keys used for one number: those carrying its keyed hash, and those whose stored
   * answer lists it (`answerKeys`, a watchlist's creation: found through the watchlist's own hashes),
   * each through an index (no answer is read). A key past its life is deleted. A key still alive keeps its row,
   * so that its charge keeps naming it and a retry cannot be charged a second time, but loses
   * everything derived from the number: its request hash becomes one no request has (a retry gets 409)
   * and its stored answer goes.
   */
  async eraseForPhone(phoneHash: string, answerKeys: string[]): Promise<{ deleted: number; scrubbed: number }> {
    const holds = `(phone_hash = $1 OR id = ANY($3::uuid[]))`;
    const rows: Array<{ deleted: number; scrubbed: number }> = await this.db.query(
      `WITH deleted AS (
         DELETE FROM idempotency_keys WHERE ${holds} AND created_at < $4::timestamptz - interval '${KEY_LIFE_HOURS} hours' RETURNING 1),
       scrubbed AS (
         UPDATE idempotency_keys SET phone_hash = NULL, request_hash = $2, response_body = NULL
          WHERE ${holds} AND created_at >= $4::timestamptz - interval '${KEY_LIFE_HOURS} hours' RETURNING 1)
       SELECT (SELECT count(*)::int FROM deleted) AS deleted, (SELECT count(*)::int FROM scrubbed) AS scrubbed`,
      [phoneHash, ERASED_REQUEST_HASH, answerKeys, this.clock.date()],
    );
    return rows[0];
  }
}

/** The request hash of an erased key: no HMAC output is all zeros in practice, so every retry differs from it. */
const ERASED_REQUEST_HASH = '0'.repeat(64);

/**
 * The claim runs before the charge, so a claim that fails charges nothing. A statement PostgreSQL
 * refused (QueryFailedError) or our own AppError goes on as it is; anything else thrown by the
 * transaction's machinery (BEGIN, COMMIT, ROLLBACK, a released runner: PostgreSQL killed under it, as
 * the fault suite does) is the database being away: 503, retry, never a 500.
 */
function lostTransaction(error: unknown): never {
  if (error instanceof AppError || error instanceof QueryFailedError) throw error;
  const lost = new AppError('SERVICE_UNAVAILABLE', 'The service database is unreachable. Nothing was charged; please retry.');
  lost.cause = error; // the log keeps what TypeORM or the driver said
  throw lost;
}
