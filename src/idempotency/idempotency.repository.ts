import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

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
}

@Injectable()
export class IdempotencyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Takes the key for a new call: it was unknown, or its 24 h have passed (then it gets a new id, so
   * its old charge does not count against the new call). The key's id, or undefined when it is in use.
   */
  async claim(accountId: string, key: string, requestHash: string): Promise<string | undefined> {
    const rows: Array<{ id: string }> = await this.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status) VALUES ($1, $2, $3, 'in_progress')
       ON CONFLICT (account_id, key) DO UPDATE
         SET id = gen_random_uuid(), request_hash = EXCLUDED.request_hash, status = 'in_progress', response_status = NULL,
             response_body = NULL, created_at = now(), claimed_at = now(), completed_at = NULL
       WHERE idempotency_keys.created_at < now() - interval '24 hours'
       RETURNING id`,
      [accountId, key, requestHash],
    );
    return rows[0]?.id;
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
    }> = await this.db.query(
      `SELECT k.id, k.request_hash, k.status, k.response_body,
              CASE WHEN c.id IS NULL THEN 'none' WHEN c.settled_at IS NULL THEN 'unsettled' ELSE 'settled' END AS charge,
              k.claimed_at < now() - make_interval(secs => $3) AS claimed_long_ago
         FROM idempotency_keys k LEFT JOIN ledger_entries c ON c.idempotency_key_id = k.id
        WHERE k.account_id = $1 AND k.key = $2`,
      [accountId, key, claimedBeforeSeconds],
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
      }
    );
  }

  /**
   * A retry takes over a key whose attempt never charged (it died before, or its charge was refunded)
   * and took the key longer ago than the bound. The key keeps its id and its 24 h. True when taken:
   * of two retries at once, one takes it.
   */
  async takeOver(keyId: string, claimedBeforeSeconds: number): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      // A SELECT around the UPDATE: TypeORM answers a bare UPDATE with [rows, count], not rows.
      `WITH taken AS (
         UPDATE idempotency_keys k SET claimed_at = now()
          WHERE k.id = $1 AND k.status = 'in_progress' AND k.claimed_at < now() - make_interval(secs => $2)
            AND NOT EXISTS (SELECT 1 FROM ledger_entries c WHERE c.idempotency_key_id = k.id)
          RETURNING 1)
       SELECT 1 FROM taken`,
      [keyId, claimedBeforeSeconds],
    );
    return rows.length > 0;
  }

  /**
   * Stores the answer of the key's call, unless one is stored already (a retry that recomputed it at
   * the same time): returns the answer that is stored now, which every later retry replays.
   */
  async complete(keyId: string, responseBody: string): Promise<string> {
    const rows: Array<{ response_body: string }> = await this.db.query(
      `WITH stored AS (
         UPDATE idempotency_keys SET status = 'completed', response_status = 200, response_body = $2, completed_at = now()
          WHERE id = $1 AND status = 'in_progress' RETURNING response_body)
       SELECT response_body FROM stored
       UNION ALL
       SELECT response_body FROM idempotency_keys WHERE id = $1 AND status = 'completed' AND NOT EXISTS (SELECT 1 FROM stored)`,
      [keyId, responseBody],
    );
    if (rows[0]) return rows[0].response_body;
    // Both stored at once: this statement's snapshot predates the other's commit. Read it now.
    const stored: Array<{ response_body: string }> = await this.db.query(
      `SELECT response_body FROM idempotency_keys WHERE id = $1 AND status = 'completed'`,
      [keyId],
    );
    return stored[0]?.response_body ?? responseBody;
  }

  /** Frees the key of a call that failed, unless the ledger still holds a charge for it (a refund still to come). */
  async release(keyId: string): Promise<void> {
    await this.db.query(
      `DELETE FROM idempotency_keys k
        WHERE k.id = $1 AND k.status = 'in_progress'
          AND NOT EXISTS (SELECT 1 FROM ledger_entries c WHERE c.idempotency_key_id = k.id)`,
      [keyId],
    );
  }
}
