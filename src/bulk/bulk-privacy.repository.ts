import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/**
 * What bulk/ keeps of phone numbers, and how it lets go of them (docs/privacy.md): the entries of
 * completed jobs after the retention period or on the customer's request, and one number on an
 * erasure. The jobs themselves (counts, cost, their ledger rows) stay.
 */
/** The stored form (full-width digits read as digits) with its last four digits hidden, its shape kept. */
export const OWN_SHAPE_MASK = (column: string) => {
  let reversed = `reverse(normalize(${column}, NFKC))`;
  for (let i = 0; i < 4; i += 1) reversed = `regexp_replace(${reversed}, '[0-9]', '*')`;
  return `reverse(${reversed})`;
};

@Injectable()
export class BulkPrivacyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Retention: at most `limit` entries of jobs completed before `before`, taken from the oldest
   * jobs whose entries add up to about `limit` (whatever their size, so many small jobs go in one
   * batch and a big one over several). A job whose last entries go here is marked and forgets its
   * Idempotency-Key (its life ended long ago). Jobs another instance is purging are skipped.
   */
  async deleteEntriesOfJobsCompletedBefore(before: Date, limit: number): Promise<{ jobs: number; entries: number }> {
    const rows: Array<{ jobs: number; entries: number }> = await this.db.query(
      `WITH oldest AS (
         SELECT id, sum(total) OVER (ORDER BY completed_at, id) - total AS before
           FROM (SELECT id, total, completed_at FROM bulk_jobs
                  WHERE status = 'completed' AND entries_deleted_at IS NULL AND completed_at < $1
                  ORDER BY completed_at, id LIMIT $2) j),
       due AS (
         SELECT j.id FROM bulk_jobs j JOIN oldest o ON o.id = j.id
          WHERE o.before < $2 AND j.entries_deleted_at IS NULL FOR UPDATE OF j SKIP LOCKED),
       gone AS (
         DELETE FROM bulk_entries
          WHERE ctid = ANY(ARRAY(SELECT e.ctid FROM bulk_entries e JOIN due ON e.job_id = due.id LIMIT $2))
          RETURNING job_id),
       emptied AS (
         SELECT due.id FROM due
          WHERE (SELECT count(*) FROM bulk_entries e WHERE e.job_id = due.id) = (SELECT count(*) FROM gone WHERE gone.job_id = due.id)),
       marked AS (
         UPDATE bulk_jobs j SET entries_deleted_at = now(), idempotency_key = NULL, request_hash = NULL
           FROM emptied WHERE j.id = emptied.id RETURNING 1)
       SELECT (SELECT count(*)::int FROM marked) AS jobs, (SELECT count(*)::int FROM gone) AS entries`,
      [before, limit],
    );
    return rows[0];
  }

  /**
   * The customer's DELETE of a completed job's entries (the job, its counts and charges stay).
   * The entries deleted; undefined when the job is not the account's or not completed.
   */
  async deleteEntriesOfCompletedJob(accountId: string, jobId: string): Promise<number | undefined> {
    return this.db.transaction(async (em) => {
      const jobs: unknown[] = await em.query(
        `SELECT 1 FROM bulk_jobs WHERE id = $1 AND account_id = $2 AND status = 'completed' FOR UPDATE`,
        [jobId, accountId],
      );
      if (jobs.length === 0) return undefined;
      const [gone]: [unknown[], number] = await em.query(`DELETE FROM bulk_entries WHERE job_id = $1 RETURNING 1`, [jobId]);
      await em.query(`UPDATE bulk_jobs SET entries_deleted_at = COALESCE(entries_deleted_at, now()) WHERE id = $1`, [jobId]);
      return gone.length;
    });
  }

  /**
   * Erasure of one number from every account's jobs, found by the keyed hashes of its forms
   * (`hashes`, src/common/number-hash.ts) through their index: an entry still waiting for its lookup is
   * answered as failed now (refunded when its job completes, like any failed lookup; the worker's write
   * of an answer requires an unanswered entry of the number, so a chunk in flight writes nothing back),
   * then every entry holding the number, in any form, keeps only a masked form, no hash and no risk verdict (whose
   * reasons name the number's range and block of ten) (`hashes[0]`,
   * the number's own, gives the number's mask; a national reading, the stored form's own shape masked). Rows
   * written before the hash column and not hashed yet (`hashUnhashed`) are matched as before, among
   * those only (their partial index). The entries changed.
   */
  async eraseNumber(hashes: string[], e164: string, masked: string, failure: { code: string; message: string }): Promise<number> {
    return this.db.transaction(async (em) => {
      await em.query(
        `WITH answered AS (
           UPDATE bulk_entries SET error_code = $2, error_message = $3, done_at = now()
            WHERE (phone_hash = ANY($1::text[]) OR (phone_hash IS NULL AND phone = $4)) AND done_at IS NULL AND chunk IS NOT NULL RETURNING job_id)
         UPDATE bulk_jobs j SET processed = j.processed + a.n
           FROM (SELECT job_id, count(*)::int AS n FROM answered GROUP BY job_id) a WHERE j.id = a.job_id`,
        [hashes, failure.code, failure.message, e164],
      );
      // A form read as the number itself (its own hash, `hashes[0]`) keeps the number's mask; a national
      // reading does not say its country, so such a form keeps its own shape with its last four digits hidden
      // (`07400 170005` → `07400 17****`), never the mask of the erased number (which may show another country).
      const [hashed]: [unknown[], number] = await em.query(
        `UPDATE bulk_entries SET phone_hash = '', risk = NULL,
                phone = CASE WHEN phone_hash = $1[1] THEN $2 ELSE ${OWN_SHAPE_MASK('phone')} END
          WHERE phone_hash = ANY($1::text[]) RETURNING 1`,
        [hashes, masked],
      );
      const [legacy]: [unknown[], number] = await em.query(
        `UPDATE bulk_entries SET phone = $2, phone_hash = '', risk = NULL
          WHERE phone_hash IS NULL AND regexp_replace(phone, '[^0-9]', '', 'g') ~ ('^(00)?' || $1 || '$') RETURNING 1`,
        [e164.slice(1), masked],
      );
      return hashed.length + legacy.length;
    });
  }

  /** Up to `limit` entries written before their hash was (the retention run hashes them with the service's key). */
  async unhashed(limit: number): Promise<Array<{ jobId: string; idx: number; phone: string }>> {
    return this.db.query(`SELECT job_id AS "jobId", idx, phone FROM bulk_entries WHERE phone_hash IS NULL LIMIT $1`, [limit]);
  }

  /** Writes their hashes; an entry hashed or erased meanwhile (another instance) is left alone. The entries written. */
  async setHashes(rows: Array<{ jobId: string; idx: number; phone: string; hash: string }>): Promise<number> {
    if (rows.length === 0) return 0;
    const written: Array<{ n: number }> = await this.db.query(
      `WITH hashed AS (
         UPDATE bulk_entries e SET phone_hash = h.hash
           FROM unnest($1::uuid[], $2::int[], $3::text[], $4::text[]) AS h(job_id, idx, phone, hash)
          WHERE e.job_id = h.job_id AND e.idx = h.idx AND e.phone = h.phone AND e.phone_hash IS NULL
         RETURNING 1)
       SELECT count(*)::int AS n FROM hashed`,
      [rows.map((row) => row.jobId), rows.map((row) => row.idx), rows.map((row) => row.phone), rows.map((row) => row.hash)],
    );
    return written[0].n;
  }
}
