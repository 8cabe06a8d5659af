import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** risk_feedback: whether the code sent after a verdict was verified (migrations/1765500000000-RiskVerdicts.ts). */
@Injectable()
export class RiskFeedbackRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** One row per verdict it is about: feedback sent again for the same verdict replaces the first (the last one counts). */
  async record(accountId: string, phoneHash: string, askedAt: Date, verified: boolean, at: Date): Promise<void> {
    await this.db.query(
      `INSERT INTO risk_feedback (account_id, phone_hash, asked_at, verified, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT ON CONSTRAINT risk_feedback_one_per_verdict DO UPDATE SET verified = EXCLUDED.verified, created_at = EXCLUDED.created_at`,
      [accountId, phoneHash, askedAt, verified, at],
    );
  }

  /** Retention: a batch of rows given before `before`; rows another instance is deleting are skipped. */
  async deleteCreatedBefore(before: Date, limit: number): Promise<number> {
    const rows: Array<{ n: number }> = await this.db.query(
      `WITH gone AS (
         DELETE FROM risk_feedback WHERE id IN (
           SELECT id FROM risk_feedback WHERE created_at < $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [before, limit],
    );
    return rows[0].n;
  }

  /** Erasure: every account's rows of the number (found by its keyed hash). */
  async deleteForPhone(phoneHash: string): Promise<number> {
    const rows: Array<{ n: number }> = await this.db.query(
      `WITH gone AS (DELETE FROM risk_feedback WHERE phone_hash = $1 RETURNING 1) SELECT count(*)::int AS n FROM gone`,
      [phoneHash],
    );
    return rows[0].n;
  }
}
