import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Bulk jobs that carry the risk verdict per entry (docs/sms-pumping.md "Bulk jobs"): `bulk_jobs.risk_verdict`,
 * set at submission (`risk: true`) and never changed, which adds the verdict's columns to the job's CSV and
 * its price to `cost_per_entry`; `bulk_entries.risk`, the verdict as first serialized (json, like `result`),
 * only beside a result. Constant defaults and a nullable column: no row is rewritten.
 */
export class BulkRiskVerdicts1795885108994 implements MigrationInterface {
  name = 'BulkRiskVerdicts1795885108994';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`SET LOCAL lock_timeout = '5s'`);
    await q.query(`ALTER TABLE bulk_jobs ADD COLUMN risk_verdict boolean NOT NULL DEFAULT false`);
    await q.query(`ALTER TABLE bulk_entries ADD COLUMN risk json`);
    await q.query(`ALTER TABLE bulk_entries ADD CONSTRAINT bulk_entries_risk_with_result CHECK (risk IS NULL OR result IS NOT NULL) NOT VALID`);
    await q.query(`ALTER TABLE bulk_entries VALIDATE CONSTRAINT bulk_entries_risk_with_result`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE bulk_entries DROP COLUMN risk`);
    await q.query(`ALTER TABLE bulk_jobs DROP COLUMN risk_verdict`);
  }
}
