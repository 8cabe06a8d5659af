import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A bulk job's CSV columns become the job's own, fixed when it is submitted (src/checks/csv-layout.ts):
 * `bulk_jobs.csv_layout` holds `{ "answer": [the answer's columns], "answered_by": [the checks whose
 * provenance columns follow] }`. Before, the CSV took the columns of every registered check when it was
 * downloaded, so registering a check changed every account's CSV, older jobs' included.
 *
 * Jobs submitted before this migration keep exactly the columns they were shown: those of the three
 * built-in checks (the only ones this repository registers), given as the column's default while it is
 * added (PostgreSQL stores a constant default once: no row is rewritten), then the default is dropped,
 * so every new job states its own. Written out here rather than derived from src/checks/: a migration
 * keeps saying what it did when the checks change later.
 */
export class BulkCsvLayoutPerJob1765100000000 implements MigrationInterface {
  name = 'BulkCsvLayoutPerJob1765100000000';

  async up(q: QueryRunner): Promise<void> {
    const before = {
      answer: ['country', 'valid', 'status', 'carrier', 'line_type', 'is_ported'],
      answered_by: ['network_status', 'line_type', 'portability'],
    };
    await q.query(`SET LOCAL lock_timeout = '5s'`);
    await q.query(`ALTER TABLE bulk_jobs ADD COLUMN csv_layout json NOT NULL DEFAULT '${JSON.stringify(before)}'`);
    await q.query(`ALTER TABLE bulk_jobs ALTER COLUMN csv_layout DROP DEFAULT`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE bulk_jobs DROP COLUMN csv_layout`);
  }
}
