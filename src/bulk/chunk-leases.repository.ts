import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export interface LapsedLease {
  queueJobId: string;
  queueName: string;
}

/** The `bulk_chunk_leases` table: who works which queue job, renewed while it works. Times are the database's. */
@Injectable()
export class ChunkLeasesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Takes (or takes over) the lease of a queue job. */
  async take(queueJobId: string, queueName: string, holder: string): Promise<void> {
    await this.db.query(
      `INSERT INTO bulk_chunk_leases (queue_job_id, queue_name, holder) VALUES ($1, $2, $3)
       ON CONFLICT (queue_job_id) DO UPDATE SET holder = EXCLUDED.holder, renewed_at = now()`,
      [queueJobId, queueName, holder],
    );
  }

  async renew(queueJobIds: string[], holder: string): Promise<void> {
    await this.db.query(`UPDATE bulk_chunk_leases SET renewed_at = now() WHERE queue_job_id = ANY($1::uuid[]) AND holder = $2`, [
      queueJobIds,
      holder,
    ]);
  }

  async release(queueJobId: string, holder: string): Promise<void> {
    await this.db.query(`DELETE FROM bulk_chunk_leases WHERE queue_job_id = $1 AND holder = $2`, [queueJobId, holder]);
  }

  /** Leases nobody renewed for `seconds`. */
  async lapsed(seconds: number): Promise<LapsedLease[]> {
    const rows: Array<{ queue_job_id: string; queue_name: string }> = await this.db.query(
      `SELECT queue_job_id, queue_name FROM bulk_chunk_leases WHERE renewed_at < now() - make_interval(secs => $1) LIMIT 100`,
      [seconds],
    );
    return rows.map((row) => ({ queueJobId: row.queue_job_id, queueName: row.queue_name }));
  }

  /** Drops a lapsed lease, unless a worker took it again meanwhile. */
  async forgetLapsed(queueJobId: string, seconds: number): Promise<void> {
    await this.db.query(`DELETE FROM bulk_chunk_leases WHERE queue_job_id = $1 AND renewed_at < now() - make_interval(secs => $2)`, [
      queueJobId,
      seconds,
    ]);
  }
}
