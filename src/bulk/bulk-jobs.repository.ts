import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ReportedAnswer } from '../checks/phone-answer.dto';
import { NO_KEY_ABOVE } from '../common/keyset-page';
import type { StoredProvenance } from '../checks/provenance';
import { joinedTransaction, TransactionHost, type TypeOrmTx } from '../database/transactions';
import { erasedSince, numberWrites } from '../erasures/number-erasures';
import { OWN_SHAPE_MASK } from './bulk-privacy.repository';
import { ERASED_BEFORE_LOOKUP_FAILURE } from './bulk-privacy.service';
import type { EnabledChecks } from '../checks/checks';
import type { CsvLayout } from '../checks/csv-layout';
import type { BulkEntryErrorCode, BulkStatus } from './dto/bulk.dto';
import type { RiskVerdictDto } from '../risk/dto/risk.dto';
import type { PlannedEntry } from './plan';

export interface BulkJob {
  id: string;
  seq: string;
  accountId: string;
  status: BulkStatus;
  total: number;
  processed: number;
  chargedEntries: number;
  costPerEntry: number;
  cost: number;
  checks: EnabledChecks;
  /** Its CSV's columns, fixed at submission (with the risk verdict's when `riskVerdict`). */
  csvLayout: CsvLayout;
  /** Submitted with `risk: true`: each entry also gets the risk verdict, priced in `costPerEntry`. */
  riskVerdict: boolean;
  source: string;
  callbackUrl: string | null;
  reservationId: string | null;
  chunks: number;
  /** Freshness of the lookups (`max_age`); null: any cached answer. */
  maxAgeSeconds: number | null;
  /** Set when the job was created with an Idempotency-Key: the hash of that request. */
  requestHash: string | null;
  createdAt: Date;
  completedAt: Date | null;
}

export type EntryErrorCode = BulkEntryErrorCode;

export interface BulkEntry {
  phone: string;
  reference: string | null;
  result: ReportedAnswer | null;
  /** Which provider answered each check of `result`, and when (null without a result, or for entries answered before it was kept). */
  answeredBy: StoredProvenance | null;
  /** The risk verdict, with `result`, in a job submitted with `risk: true`. */
  risk: RiskVerdictDto | null;
  error: { code: EntryErrorCode; message: string } | null;
}

/** The answer for one distinct number of a job, written to every pending entry with that number. */
export type PhoneAnswer =
  | { phone: string; result: ReportedAnswer; answeredBy: StoredProvenance | null; risk?: RiskVerdictDto }
  | { phone: string; error: { code: EntryErrorCode; message: string } };

export interface NewBulkJob {
  id: string;
  accountId: string;
  entries: PlannedEntry[];
  /** Each entry's keyed hash for erasure (src/common/number-hash.ts), '' when its form holds no number. */
  phoneHashes: string[];
  chargedEntries: number;
  costPerEntry: number;
  checks: EnabledChecks;
  csvLayout: CsvLayout;
  riskVerdict: boolean;
  source: string;
  callbackUrl: string | null;
  chunks: number;
  invalidMessage: string;
  maxAgeSeconds: number | null;
  idempotency: { key: string; requestHash: string } | null;
}

/** Thrown by `lockIdempotencyKey`/`insert` when the Idempotency-Key already has a job: the transaction (and its reservation) rolls back. */
export class IdempotencyKeyTaken extends Error {}

const JOB_COLUMNS = `id, seq, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, csv_layout, source,
  callback_url, reservation_id, chunks, max_age_seconds, request_hash, created_at, completed_at, risk_verdict`;

@Injectable()
export class BulkJobsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly txHost: TransactionHost<TypeOrmTx>,
  ) {}

  /**
   * First in the submit's transaction (before the key's lock and the reservation): an erasure under way
   * waits for this submission to commit, or this submission sees its tombstones (`insert`).
   */
  async guardNumberWrites(): Promise<void> {
    await numberWrites.guard(joinedTransaction(this.txHost));
  }

  /**
   * Serializes twins on an Idempotency-Key in the caller's transaction (BulkService.submit), before
   * anything is reserved (a transaction-scoped advisory lock): a twin that waited finds the first's
   * job on the key's unique index and replays it, rather than reserving again against the balance and
   * daily cap the first already used (which answered it 402). Throws IdempotencyKeyTaken when the key
   * already has a job.
   */
  async lockIdempotencyKey(accountId: string, key: string): Promise<void> {
    // Outside a transaction the xact lock would be released at once: joinedTransaction throws then.
    const tx = joinedTransaction(this.txHost);
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext($1 || ':bulk-key:' || $2))`, [accountId, key]);
    const [taken] = await tx.query(`SELECT 1 FROM bulk_jobs WHERE account_id = $1 AND idempotency_key = $2`, [accountId, key]);
    if (taken) throw new IdempotencyKeyTaken();
  }

  /**
   * The job and its entries (syntax errors already answered), in the caller's transaction, where the
   * reservation and the queue jobs are written too (BulkService.submit): a 402 or any failure leaves
   * nothing behind, and a crash after the commit leaves a job the queue will run.
   */
  async insert(job: NewBulkJob, reservationId: string | null): Promise<BulkJob> {
    const transaction = joinedTransaction(this.txHost);
    {
      const invalid = job.entries.filter((entry) => !entry.valid).length;
      const [row] = await transaction.query(
        `INSERT INTO bulk_jobs (id, account_id, total, processed, charged_entries, cost_per_entry, cost, checks, source, callback_url,
                                reservation_id, chunks, max_age_seconds, idempotency_key, request_hash, csv_layout, risk_verdict)
         VALUES ($1, $2, $3, $4, $5::int, $6::int, $5::bigint * $6::int, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
         ON CONFLICT ON CONSTRAINT bulk_jobs_idempotency_key_unique DO NOTHING
         RETURNING ${JOB_COLUMNS}`,
        [
          job.id,
          job.accountId,
          job.entries.length,
          invalid,
          job.chargedEntries,
          job.costPerEntry,
          JSON.stringify(job.checks),
          job.source,
          job.callbackUrl,
          reservationId,
          job.chunks,
          job.maxAgeSeconds,
          job.idempotency?.key ?? null,
          job.idempotency?.requestHash ?? null,
          JSON.stringify({ answer: job.csvLayout.answer, answered_by: job.csvLayout.answeredBy }),
          job.riskVerdict,
        ],
      );
      if (!row) throw new IdempotencyKeyTaken();
      // One statement for all entries (up to 1,000), whatever their number.
      await transaction.query(
        `INSERT INTO bulk_entries (job_id, idx, phone, chunk, error_code, error_message, done_at, reference, phone_hash)
         SELECT $1, e.idx, e.phone, e.chunk,
                CASE WHEN e.chunk IS NULL THEN 'INVALID_REQUEST' END,
                CASE WHEN e.chunk IS NULL THEN $5 END,
                CASE WHEN e.chunk IS NULL THEN now() END,
                e.reference, e.phone_hash
           FROM unnest($2::int[], $3::text[], $4::int[], $6::text[], $7::text[]) AS e(idx, phone, chunk, reference, phone_hash)`,
        [
          job.id,
          job.entries.map((e) => e.index),
          job.entries.map((e) => e.phone),
          job.entries.map((e) => e.chunk),
          job.invalidMessage,
          job.entries.map((e) => e.reference ?? null),
          job.phoneHashes,
        ],
      );
      // An entry of a number erased since this transaction began (docs/privacy.md, "Erasure") is left as
      // the erasure leaves one: masked, no hash, and (if it was to be looked up) failed, so refunded when
      // the job completes like any failed lookup. Same transaction: the number is never committed.
      await transaction.query(
        `WITH erased AS (
           UPDATE bulk_entries SET phone = ${OWN_SHAPE_MASK('bulk_entries.phone')}, phone_hash = '',
                  error_code = CASE WHEN chunk IS NULL THEN error_code ELSE $2 END,
                  error_message = CASE WHEN chunk IS NULL THEN error_message ELSE $3 END,
                  done_at = COALESCE(done_at, now())
            WHERE job_id = $1 AND phone_hash <> '' AND ${erasedSince('bulk_entries.phone_hash')}
            RETURNING chunk IS NOT NULL AS pending)
         UPDATE bulk_jobs SET processed = processed + (SELECT count(*) FROM erased WHERE pending) WHERE id = $1`,
        [job.id, ERASED_BEFORE_LOOKUP_FAILURE.code, ERASED_BEFORE_LOOKUP_FAILURE.message],
      );
      return toJob(row);
    }
  }

  async findForAccount(accountId: string, id: string): Promise<BulkJob | undefined> {
    const rows: JobRow[] = await this.db.query(`SELECT ${JOB_COLUMNS} FROM bulk_jobs WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows[0] && toJob(rows[0]);
  }

  async findByIdempotencyKey(accountId: string, key: string): Promise<BulkJob | undefined> {
    const rows: JobRow[] = await this.db.query(`SELECT ${JOB_COLUMNS} FROM bulk_jobs WHERE account_id = $1 AND idempotency_key = $2`, [accountId, key]);
    return rows[0] && toJob(rows[0]);
  }

  async find(id: string): Promise<BulkJob | undefined> {
    const rows: JobRow[] = await this.db.query(`SELECT ${JOB_COLUMNS} FROM bulk_jobs WHERE id = $1`, [id]);
    return rows[0] && toJob(rows[0]);
  }

  /**
   * Jobs by status, from the counts the database keeps beside bulk_jobs (a trigger per statement, see
   * migration 1764800000000): a scrape costs the same however many jobs were ever run. Undefined when
   * the counts do not exist (not migrated yet).
   */
  async countByStatus(): Promise<Map<string, number> | undefined> {
    const [{ present }]: Array<{ present: boolean }> = await this.db.query(`SELECT to_regclass('bulk_job_counts') IS NOT NULL AS present`);
    if (!present) return undefined;
    const rows: Array<{ status: string; count: string }> = await this.db.query(`SELECT status, sum(jobs) AS count FROM bulk_job_counts GROUP BY status`);
    return new Map(rows.map((row) => [row.status, Number(row.count)]));
  }

  /** Newest first, keyset-paginated on seq. */
  async page(accountId: string, limit: number, beforeSeq: string | undefined): Promise<BulkJob[]> {
    const rows: JobRow[] = await this.db.query(
      // An owner's page: the shape of src/common/keyset-page.ts, on bulk_jobs_account_seq_idx.
      `SELECT ${JOB_COLUMNS} FROM bulk_jobs
        WHERE account_id = ANY(ARRAY[$1::uuid]) AND seq < COALESCE($2::bigint, ${NO_KEY_ABOVE})
        ORDER BY account_id, seq DESC LIMIT $3`,
      [accountId, beforeSeq ?? null, limit],
    );
    return rows.map(toJob);
  }

  /** Entries in input order: all of them, or only those answered so far. */
  async entries(jobId: string, onlyDone: boolean): Promise<BulkEntry[]> {
    const rows: Array<{
      phone: string;
      reference: string | null;
      result: ReportedAnswer | null;
      answered_by: StoredProvenance | null;
      risk: RiskVerdictDto | null;
      error_code: EntryErrorCode | null;
      error_message: string | null;
    }> =
      await this.db.query(
        `SELECT phone, reference, result, answered_by, risk, error_code, error_message FROM bulk_entries
          WHERE job_id = $1 AND ($2::boolean = false OR done_at IS NOT NULL)
          ORDER BY idx`,
        [jobId, onlyDone],
      );
    return rows.map((row) => ({
      phone: row.phone,
      reference: row.reference,
      result: row.result,
      answeredBy: row.answered_by,
      risk: row.risk,
      error: row.error_code ? { code: row.error_code, message: row.error_message ?? '' } : null,
    }));
  }

  async markProcessing(jobId: string): Promise<void> {
    await this.db.query(`UPDATE bulk_jobs SET status = 'processing', started_at = now() WHERE id = $1 AND status = 'queued'`, [jobId]);
  }

  /** The job's distinct numbers to look up (its list, for the runs within it); a number erased meanwhile is left out. */
  async listNumbers(jobId: string): Promise<string[]> {
    const rows: Array<{ phone: string }> = await this.db.query(
      `SELECT DISTINCT phone FROM bulk_entries WHERE job_id = $1 AND chunk IS NOT NULL AND phone_hash IS DISTINCT FROM ''`,
      [jobId],
    );
    return rows.map((row) => row.phone);
  }

  /** The chunk's distinct numbers that still have an entry without an answer. */
  async pendingPhones(jobId: string, chunk: number): Promise<string[]> {
    const rows: Array<{ phone: string }> = await this.db.query(
      `SELECT DISTINCT phone FROM bulk_entries WHERE job_id = $1 AND chunk = $2 AND done_at IS NULL`,
      [jobId, chunk],
    );
    return rows.map((row) => row.phone);
  }

  /**
   * Writes a batch of answers in one statement, each to every still-pending entry with that number,
   * and advances `processed` by the entries actually written. json, not jsonb, all the way: an
   * answer is kept as serialized, its keys in the order /filter sends them. An entry already answered (by a
   * worker that ran the same chunk before a crash) is left as it is and not counted again.
   */
  async recordAnswers(jobId: string, answers: PhoneAnswer[]): Promise<number> {
    if (answers.length === 0) return 0;
    const rows: Array<{ written: string }> = await this.db.query(
      `WITH answer AS (
         SELECT * FROM json_to_recordset($2::json) AS a(phone text, result json, answered_by json, risk json, error_code text, error_message text)),
       written AS (
         UPDATE bulk_entries e
            SET result = answer.result, answered_by = answer.answered_by, risk = answer.risk, error_code = answer.error_code, error_message = answer.error_message, done_at = now()
           FROM answer
          WHERE e.job_id = $1 AND e.phone = answer.phone AND e.done_at IS NULL AND e.chunk IS NOT NULL
         RETURNING 1),
       counted AS (
         UPDATE bulk_jobs SET processed = processed + (SELECT count(*) FROM written) WHERE id = $1 RETURNING 1)
       SELECT (SELECT count(*) FROM written) AS written, (SELECT count(*) FROM counted) AS counted`,
      [
        jobId,
        JSON.stringify(
          answers.map((answer) =>
            'result' in answer
              ? { phone: answer.phone, result: answer.result, answered_by: answer.answeredBy, risk: answer.risk ?? null, error_code: null, error_message: null }
              : { phone: answer.phone, result: null, answered_by: null, risk: null, error_code: answer.error.code, error_message: answer.error.message },
          ),
        ),
      ],
    );
    return Number(rows[0].written);
  }

  /** Entries still without an answer, and those that failed (to refund): the lookup, or the risk verdict of a job with `risk: true`. */
  async outcomeCounts(jobId: string): Promise<{ pending: number; failed: number }> {
    const rows: Array<{ pending: string; failed: string }> = await this.db.query(
      `SELECT count(*) FILTER (WHERE done_at IS NULL) AS pending,
              count(*) FILTER (WHERE error_code IN ('PROVIDER_UNAVAILABLE', 'SERVICE_UNAVAILABLE')) AS failed
         FROM bulk_entries WHERE job_id = $1`,
      [jobId],
    );
    return { pending: Number(rows[0].pending), failed: Number(rows[0].failed) };
  }

  /** Completes the job once every entry has its answer. True for the one caller that completed it. */
  async markCompleted(jobId: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(
      `UPDATE bulk_jobs SET status = 'completed', completed_at = now(), started_at = COALESCE(started_at, now())
        WHERE id = $1 AND status <> 'completed'
          AND NOT EXISTS (SELECT 1 FROM bulk_entries WHERE job_id = $1 AND done_at IS NULL)
        RETURNING id`,
      [jobId],
    );
    return rows.length > 0;
  }
}

interface JobRow {
  id: string;
  seq: string;
  account_id: string;
  status: BulkStatus;
  total: number;
  processed: number;
  charged_entries: number;
  cost_per_entry: number;
  cost: string;
  checks: EnabledChecks;
  csv_layout: { answer: string[]; answered_by: string[] };
  source: string;
  callback_url: string | null;
  reservation_id: string | null;
  chunks: number;
  max_age_seconds: number | null;
  request_hash: string | null;
  created_at: Date;
  completed_at: Date | null;
  risk_verdict: boolean;
}

function toJob(row: JobRow): BulkJob {
  return {
    id: row.id,
    seq: String(row.seq),
    accountId: row.account_id,
    status: row.status,
    total: row.total,
    processed: row.processed,
    chargedEntries: row.charged_entries,
    costPerEntry: row.cost_per_entry,
    cost: Number(row.cost),
    checks: row.checks,
    csvLayout: { answer: row.csv_layout.answer, answeredBy: row.csv_layout.answered_by, risk: row.risk_verdict },
    riskVerdict: row.risk_verdict,
    source: row.source,
    callbackUrl: row.callback_url,
    reservationId: row.reservation_id === null ? null : String(row.reservation_id),
    chunks: row.chunks,
    maxAgeSeconds: row.max_age_seconds,
    requestHash: row.request_hash,
    createdAt: row.created_at,
    completedAt: row.completed_at,
  };
}
