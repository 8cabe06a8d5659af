import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Costs that stay flat as the data grows (docs/benchmark.md, "Data growth"):
 *
 * - `watchlists.watched`: the watchlist's entries not removed, kept by statement-level triggers on
 *   watchlist_entries in the same statement that adds, removes or deletes entries (one UPDATE of the
 *   watchlist per statement, none when a statement changes no count: a round's writes). Listing a
 *   watchlist and the plan's limit of watched numbers read it instead of counting the entries.
 * - `bulk_job_counts`: jobs by status for GET /metrics, kept the same way on bulk_jobs, spread over 16
 *   slots (by the job's seq) so that concurrent submissions do not queue on one counter row.
 * - `ledger_entries_refund_of_unique` becomes partial (`WHERE refund_of IS NOT NULL`): it indexed every
 *   charge's NULL. A charge is still refunded at most once: the same unique rule over the same values
 *   (NULLs were never equal to each other), under the same name.
 * - `account_events_created_at_idx`: the hourly retention delete finds expired events by index.
 *
 * The triggers are created before the backfill, and CREATE TRIGGER locks out writers of the table until
 * this migration commits, so no add or removal is missed or counted twice.
 */
export class CountsKeptAndLeanerIndexes1764800000000 implements MigrationInterface {
  name = 'CountsKeptAndLeanerIndexes1764800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE watchlists ADD COLUMN watched integer NOT NULL DEFAULT 0 CONSTRAINT watchlists_watched_not_negative CHECK (watched >= 0)`);
    await q.query(`
      CREATE FUNCTION watchlist_entries_count_watched() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          UPDATE watchlists w SET watched = w.watched + d.delta
            FROM (SELECT watchlist_id, count(*) AS delta FROM new_rows WHERE removed_at IS NULL GROUP BY watchlist_id) d
           WHERE w.id = d.watchlist_id;
        ELSIF TG_OP = 'DELETE' THEN
          UPDATE watchlists w SET watched = w.watched - d.delta
            FROM (SELECT watchlist_id, count(*) AS delta FROM old_rows WHERE removed_at IS NULL GROUP BY watchlist_id) d
           WHERE w.id = d.watchlist_id;
        ELSE
          UPDATE watchlists w SET watched = w.watched + d.delta
            FROM (SELECT watchlist_id, sum(change) AS delta FROM (
                    SELECT watchlist_id, 1 AS change FROM new_rows WHERE removed_at IS NULL
                    UNION ALL SELECT watchlist_id, -1 FROM old_rows WHERE removed_at IS NULL) c
                  GROUP BY watchlist_id HAVING sum(change) <> 0) d
           WHERE w.id = d.watchlist_id;
        END IF;
        RETURN NULL;
      END $$`);
    await createStatementTriggers(q, 'watchlist_entries', 'watchlist_entries_watched', 'watchlist_entries_count_watched');
    await q.query(`
      UPDATE watchlists w SET watched = c.watched
        FROM (SELECT watchlist_id, count(*) AS watched FROM watchlist_entries WHERE removed_at IS NULL GROUP BY watchlist_id) c
       WHERE w.id = c.watchlist_id`);

    await q.query(`
      CREATE TABLE bulk_job_counts (
        status  varchar(10) NOT NULL,
        slot    smallint NOT NULL,
        jobs    bigint NOT NULL CHECK (jobs >= 0),
        PRIMARY KEY (status, slot)
      )`);
    await q.query(`
      CREATE FUNCTION bulk_jobs_count_by_status() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO bulk_job_counts (status, slot, jobs)
          SELECT status, seq % 16, count(*) FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
          ON CONFLICT (status, slot) DO UPDATE SET jobs = bulk_job_counts.jobs + EXCLUDED.jobs;
        ELSIF TG_OP = 'DELETE' THEN
          UPDATE bulk_job_counts c SET jobs = c.jobs - d.jobs
            FROM (SELECT status, seq % 16 AS slot, count(*) AS jobs FROM old_rows GROUP BY 1, 2) d
           WHERE c.status = d.status AND c.slot = d.slot;
        ELSE
          -- Only a change of status moves a count (most updates of a job are its progress).
          INSERT INTO bulk_job_counts (status, slot, jobs)
          SELECT status, slot, 0 FROM (
                   SELECT n.status, n.seq % 16 AS slot FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.status <> n.status) moved
           GROUP BY 1, 2 ORDER BY 1, 2
          ON CONFLICT (status, slot) DO NOTHING;
          UPDATE bulk_job_counts c SET jobs = c.jobs + d.change
            FROM (SELECT status, slot, sum(change) AS change FROM (
                    SELECT n.status, n.seq % 16 AS slot, 1 AS change FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.status <> n.status
                    UNION ALL
                    SELECT o.status, o.seq % 16, -1 FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE o.status <> n.status) m
                  GROUP BY 1, 2 HAVING sum(change) <> 0) d
           WHERE c.status = d.status AND c.slot = d.slot;
        END IF;
        RETURN NULL;
      END $$`);
    await createStatementTriggers(q, 'bulk_jobs', 'bulk_jobs_counts', 'bulk_jobs_count_by_status');
    await q.query(`INSERT INTO bulk_job_counts (status, slot, jobs) SELECT status, seq % 16, count(*) FROM bulk_jobs GROUP BY 1, 2`);

    await q.query(`CREATE UNIQUE INDEX ledger_entries_refund_of_partial ON ledger_entries (refund_of) WHERE refund_of IS NOT NULL`);
    await q.query(`ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_refund_of_unique`);
    await q.query(`ALTER INDEX ledger_entries_refund_of_partial RENAME TO ledger_entries_refund_of_unique`);

    await q.query(`CREATE INDEX account_events_created_at_idx ON account_events (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX account_events_created_at_idx`);
    await q.query(`DROP INDEX ledger_entries_refund_of_unique`);
    await q.query(`ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_refund_of_unique UNIQUE (refund_of)`);
    for (const event of ['insert', 'update', 'delete']) {
      await q.query(`DROP TRIGGER bulk_jobs_counts_${event} ON bulk_jobs`);
      await q.query(`DROP TRIGGER watchlist_entries_watched_${event} ON watchlist_entries`);
    }
    await q.query(`DROP FUNCTION bulk_jobs_count_by_status()`);
    await q.query(`DROP TABLE bulk_job_counts`);
    await q.query(`DROP FUNCTION watchlist_entries_count_watched()`);
    await q.query(`ALTER TABLE watchlists DROP COLUMN watched`);
  }
}

/** `<prefix>_insert`, `_update` and `_delete`: `fn` once per statement, with its rows as old_rows / new_rows. */
async function createStatementTriggers(q: QueryRunner, table: string, prefix: string, fn: string): Promise<void> {
  const events = [
    ['INSERT', 'NEW TABLE AS new_rows'],
    ['UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows'],
    ['DELETE', 'OLD TABLE AS old_rows'],
  ];
  for (const [event, tables] of events) {
    await q.query(`CREATE TRIGGER ${prefix}_${event.toLowerCase()} AFTER ${event} ON ${table} REFERENCING ${tables} FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`);
  }
}
