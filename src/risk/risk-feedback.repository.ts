import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { erasedSince, numberWrites } from '../erasures/number-erasures';

/** risk_feedback: whether the code sent after a verdict was verified (migrations/1765500000000-RiskVerdicts.ts). */
@Injectable()
export class RiskFeedbackRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * One row per verdict it is about: feedback sent again for the same verdict replaces the first (the
   * last one counts). False, and nothing written, for a number erased since `began` (`began()`, taken
   * before the ask was read from the counters; docs/privacy.md, "Erasure").
   */
  async record(accountId: string, phoneHash: string, askedAt: Date, verified: boolean, at: Date, began: Date): Promise<boolean> {
    return this.db.transaction(async (em) => {
      await numberWrites.guard(em);
      const rows: unknown[] = await em.query(
        `INSERT INTO risk_feedback (account_id, phone_hash, asked_at, verified, created_at)
         SELECT $1, $2, $3, $4, $5 WHERE NOT ${erasedSince('$2::text', '$6::timestamptz')}
         ON CONFLICT ON CONSTRAINT risk_feedback_one_per_verdict DO UPDATE SET verified = EXCLUDED.verified, created_at = EXCLUDED.created_at
         RETURNING 1`,
        [accountId, phoneHash, askedAt, verified, at, began],
      );
      return rows.length > 0;
    });
  }

  /** Where a feedback's work begins, by the database's clock: before its ask is read. */
  began(): Promise<Date> {
    return numberWrites.began(this.db);
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
