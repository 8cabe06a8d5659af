import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export interface StoredIdempotentCall {
  requestHash: string;
  status: 'in_progress' | 'completed';
  responseBody: unknown;
}

@Injectable()
export class IdempotencyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Claims the key for this call. True when claimed: it was new, older than 24 h, or left
   * in progress by a call that died (older than `abandonedAfterSeconds`).
   */
  async claim(accountId: string, key: string, requestHash: string, abandonedAfterSeconds: number): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status) VALUES ($1, $2, $3, 'in_progress')
       ON CONFLICT (account_id, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, status = 'in_progress', response_status = NULL,
             response_body = NULL, created_at = now(), completed_at = NULL
       WHERE idempotency_keys.created_at < now() - interval '24 hours'
          OR (idempotency_keys.status = 'in_progress' AND idempotency_keys.created_at < now() - make_interval(secs => $4))
       RETURNING 1`,
      [accountId, key, requestHash, abandonedAfterSeconds],
    );
    return rows.length > 0;
  }

  async find(accountId: string, key: string): Promise<StoredIdempotentCall | undefined> {
    const rows: Array<{ request_hash: string; status: 'in_progress' | 'completed'; response_body: unknown }> = await this.db.query(
      `SELECT request_hash, status, response_body FROM idempotency_keys WHERE account_id = $1 AND key = $2`,
      [accountId, key],
    );
    return rows[0] && { requestHash: rows[0].request_hash, status: rows[0].status, responseBody: rows[0].response_body };
  }

  async complete(accountId: string, key: string, responseBody: unknown): Promise<void> {
    await this.db.query(
      `UPDATE idempotency_keys SET status = 'completed', response_status = 200, response_body = $3, completed_at = now()
        WHERE account_id = $1 AND key = $2`,
      [accountId, key, JSON.stringify(responseBody)],
    );
  }

  async release(accountId: string, key: string): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND status = 'in_progress'`, [accountId, key]);
  }

  async deleteExpired(): Promise<void> {
    await this.db.query(`DELETE FROM idempotency_keys WHERE created_at < now() - interval '24 hours'`);
  }
}
