import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Bulk lookups: one row per job, one per entry (input order). An entry is done once it has a
 * result or an error, and is written only while not done, so a resumed job skips what is done and
 * never answers an entry twice. The job's credits are one settled CHARGE (the reservation) and at
 * most one REFUND of it (the failed lookups), both in ledger_entries.
 * pg-boss keeps its queue in its own schema; it creates and migrates that itself.
 */
export class BulkJobs1763800000003 implements MigrationInterface {
  name = 'BulkJobs1763800000003';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE bulk_jobs (
        id              uuid PRIMARY KEY,
        seq             bigint GENERATED ALWAYS AS IDENTITY CONSTRAINT bulk_jobs_seq_unique UNIQUE,
        account_id      uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        status          varchar(10) NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'processing', 'completed')),
        total           integer NOT NULL CHECK (total BETWEEN 1 AND 1000),
        processed       integer NOT NULL DEFAULT 0 CHECK (processed BETWEEN 0 AND total),
        charged_entries integer NOT NULL CHECK (charged_entries BETWEEN 0 AND total),
        cost_per_entry  integer NOT NULL CHECK (cost_per_entry >= 0),
        cost            bigint NOT NULL CHECK (cost = charged_entries * cost_per_entry),
        checks          jsonb NOT NULL,
        source          varchar(64) NOT NULL,
        callback_url    varchar(2048),
        reservation_id  bigint REFERENCES ledger_entries(id),
        chunks          integer NOT NULL CHECK (chunks >= 1),
        created_at      timestamptz NOT NULL DEFAULT now(),
        started_at      timestamptz,
        completed_at    timestamptz,
        CONSTRAINT bulk_jobs_completed_at CHECK ((status = 'completed') = (completed_at IS NOT NULL)),
        CONSTRAINT bulk_jobs_reserved CHECK ((cost > 0) = (reservation_id IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX bulk_jobs_account_seq_idx ON bulk_jobs (account_id, seq DESC)`);
    await q.query(`CREATE INDEX bulk_jobs_unfinished_idx ON bulk_jobs (status) WHERE status <> 'completed'`);

    await q.query(`
      CREATE TABLE bulk_entries (
        job_id         uuid NOT NULL REFERENCES bulk_jobs(id) ON DELETE CASCADE,
        idx            integer NOT NULL CHECK (idx >= 0),
        phone          varchar(64) NOT NULL,
        chunk          integer,
        result         jsonb,
        error_code     varchar(32),
        error_message  varchar(500),
        done_at        timestamptz,
        PRIMARY KEY (job_id, idx),
        CONSTRAINT bulk_entries_outcome CHECK (
          (done_at IS NULL AND result IS NULL AND error_code IS NULL) OR
          (done_at IS NOT NULL AND (result IS NULL) <> (error_code IS NULL))),
        -- entries that fail the syntax rule are answered at submission and never queued
        CONSTRAINT bulk_entries_chunk CHECK ((chunk IS NULL) = (error_code IS NOT DISTINCT FROM 'INVALID_REQUEST'))
      )`);
    await q.query(`CREATE INDEX bulk_entries_pending_idx ON bulk_entries (job_id, chunk) WHERE done_at IS NULL`);
    await q.query(`CREATE INDEX bulk_entries_phone_idx ON bulk_entries (job_id, phone)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE bulk_entries`);
    await q.query(`DROP TABLE bulk_jobs`);
  }
}
