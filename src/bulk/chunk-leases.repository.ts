import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { asRows } from '../database/query-rows';

export interface LapsedLease {
  queueJobId: string;
  queueName: string;
  /** Its last renewal: a queue job started after it is a new run, not the dead worker's. */
  renewedAt: Date;
}

/**
 * The `bulk_chunk_leases` table: who works which queue job, renewed while it works. Every time it writes
 * or compares is the caller's, from the Clock (docs/development.md), except a queue job's start, which
 * is pg-boss's (the database's time, which the Clock starts at and only moves forward from).
 */
@Injectable()
export class ChunkLeasesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Takes (or takes over) the lease of a queue job, renewed `now`. */
  async take(queueJobId: string, queueName: string, holder: string, now: Date): Promise<void> {
    await this.db.query(
      `INSERT INTO bulk_chunk_leases (queue_job_id, queue_name, holder, renewed_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (queue_job_id) DO UPDATE SET holder = EXCLUDED.holder, renewed_at = EXCLUDED.renewed_at`,
      [queueJobId, queueName, holder, now],
    );
  }

  /** Renews (to `now`) the leases still held by their holders; returns the queue job ids whose lease was still theirs. */
  async renew(leases: Array<{ queueJobId: string; holder: string }>, now: Date): Promise<string[]> {
    const result: unknown = await this.db.query(
      `UPDATE bulk_chunk_leases l SET renewed_at = $3
       FROM unnest($1::uuid[], $2::text[]) AS held(queue_job_id, holder)
       WHERE l.queue_job_id = held.queue_job_id AND l.holder = held.holder
       RETURNING l.queue_job_id`,
      [leases.map((lease) => lease.queueJobId), leases.map((lease) => lease.holder), now],
    );
    return (asRows(result) as Array<{ queue_job_id: string }>).map((row) => row.queue_job_id);
  }

  async release(queueJobId: string, holder: string): Promise<void> {
    await this.db.query(`DELETE FROM bulk_chunk_leases WHERE queue_job_id = $1 AND holder = $2`, [queueJobId, holder]);
  }

  /**
   * Claims leases nobody renewed since `renewedBefore` (now less the lease period) by deleting them, in
   * one statement: of instances that look at once, one gets each lease (the others wait on its row
   * lock, then find it gone), and a lease renewed meanwhile is not lapsed any more and stays.
   */
  async claimLapsed(renewedBefore: Date): Promise<LapsedLease[]> {
    const result: unknown = await this.db.query(
      `DELETE FROM bulk_chunk_leases
       WHERE queue_job_id IN (
         SELECT queue_job_id FROM bulk_chunk_leases WHERE renewed_at < $1 LIMIT 100 FOR UPDATE SKIP LOCKED
       ) AND renewed_at < $1
       RETURNING queue_job_id, queue_name, renewed_at`,
      [renewedBefore],
    );
    return (asRows(result) as Array<{ queue_job_id: string; queue_name: string; renewed_at: Date }>).map((row) => ({
      queueJobId: row.queue_job_id,
      queueName: row.queue_name,
      renewedAt: row.renewed_at,
    }));
  }

  /**
   * Gives a lease, lapsed already, to each queue job of `queueName` active since before `startedBefore`
   * (now less the lease period) with no lease: its worker died between taking the job from the queue (pg-boss marks it active in a statement
   * of its own) and taking its lease, or between releasing the lease and the queue marking the job done
   * (pg-boss completes it without waiting), or an instance died between claiming a lapsed lease and
   * handing its chunk out. Its renewal is the job's start, so the next `claimLapsed` hands it
   * out like any dead worker's chunk, instead of at its expiration (BULK_CHUNK_TIMEOUT_SECONDS). A live
   * worker that takes the lease after all takes it over (`take`); at worst the chunk runs twice, which
   * costs lookups, never money. `queueSchema` is BULK_QUEUE_SCHEMA, validated as an SQL identifier.
   */
  async adoptOrphans(queueSchema: string, queueName: string, startedBefore: Date): Promise<number> {
    const result: unknown = await this.db.query(
      `INSERT INTO bulk_chunk_leases (queue_job_id, queue_name, holder, renewed_at)
       SELECT j.id, j.name, 'orphan', j.started_on FROM ${queueSchema}.job j
        WHERE j.name = $1 AND j.state = 'active' AND j.started_on < $2
          AND NOT EXISTS (SELECT 1 FROM bulk_chunk_leases l WHERE l.queue_job_id = j.id)
       ON CONFLICT (queue_job_id) DO NOTHING
       RETURNING queue_job_id`,
      [queueName, startedBefore],
    );
    return asRows(result).length;
  }

  /** Puts back a claimed lease whose chunk could not be handed out (the database went away): the next look tries again. */
  async restore(lease: LapsedLease): Promise<void> {
    await this.db.query(
      `INSERT INTO bulk_chunk_leases (queue_job_id, queue_name, holder, renewed_at) VALUES ($1, $2, 'lapsed', $3) ON CONFLICT (queue_job_id) DO NOTHING`,
      [lease.queueJobId, lease.queueName, lease.renewedAt],
    );
  }
}
