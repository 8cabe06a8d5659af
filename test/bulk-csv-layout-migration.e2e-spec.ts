import { randomUUID } from 'node:crypto';
import { DataSource, QueryRunner } from 'typeorm';
import { BulkCsvLayoutPerJob1765100000000 } from '../migrations/1765100000000-BulkCsvLayoutPerJob';
import { dataSourceOptions } from '../src/database/data-source-options';

/**
 * The migration that stores each bulk job's CSV columns keeps the columns of the jobs already there (the
 * three built-in checks', whatever the job had on) and makes every new job state its own. Run inside one
 * transaction that is rolled back (DDL is transactional in PostgreSQL), so the e2e database is left as
 * the other suites see it.
 */
describe('migration BulkCsvLayoutPerJob', () => {
  let db: DataSource;
  let q: QueryRunner;
  const accountId = randomUUID();
  const jobId = randomUUID();

  beforeAll(async () => {
    db = await new DataSource({ ...dataSourceOptions(process.env.DATABASE_URL!, 2) }).initialize();
    q = db.createQueryRunner();
    await q.startTransaction();
    await new BulkCsvLayoutPerJob1765100000000().down(q);
    await q.query(`INSERT INTO accounts (id, name, plan) VALUES ($1, 'migration test', 'free')`, [accountId]);
    await q.query(
      `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, source, chunks, completed_at)
       VALUES ($1, $2, 'completed', 1, 1, 0, 4, 0, '{"network_status": true, "line_type": false, "portability": false}', 'internal', 1, now())`,
      [jobId, accountId],
    );
  });
  afterAll(async () => {
    await q?.rollbackTransaction();
    await q?.release();
    await db?.destroy();
  });

  it('up: a job already there keeps the columns it was shown before, those of the three built-in checks', async () => {
    await new BulkCsvLayoutPerJob1765100000000().up(q);
    const [row] = await q.query(`SELECT csv_layout FROM bulk_jobs WHERE id = $1`, [jobId]);
    expect(row.csv_layout).toEqual({
      answer: ['country', 'valid', 'status', 'carrier', 'line_type', 'is_ported'],
      answered_by: ['network_status', 'line_type', 'portability'],
    });
  });

  it('up: a new job must state its columns (no default)', async () => {
    await q.query('SAVEPOINT no_layout');
    await expect(
      q.query(
        `INSERT INTO bulk_jobs (id, account_id, status, total, processed, charged_entries, cost_per_entry, cost, checks, source, chunks)
         VALUES ($1, $2, 'queued', 1, 0, 0, 4, 0, '{}', 'internal', 1)`,
        [randomUUID(), accountId],
      ),
    ).rejects.toThrow(/csv_layout/);
    await q.query('ROLLBACK TO SAVEPOINT no_layout');
  });
});
