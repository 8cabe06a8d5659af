import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Leases of the bulk chunks being worked: the worker renews its lease every few seconds; a lease not
 * renewed for BULK_CHUNK_LEASE_SECONDS belongs to a dead instance, and any instance hands its chunk
 * out again (the queue's expiration, BULK_CHUNK_TIMEOUT_SECONDS, stays as the last resort).
 * Keyed by the queue job (pg-boss id) that carries the chunk.
 */
export class BulkChunkLeases1764200000000 implements MigrationInterface {
  name = 'BulkChunkLeases1764200000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE bulk_chunk_leases (
        queue_job_id  uuid PRIMARY KEY,
        queue_name    varchar(128) NOT NULL,
        holder        varchar(128) NOT NULL,
        renewed_at    timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX bulk_chunk_leases_renewed_at_idx ON bulk_chunk_leases (renewed_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE bulk_chunk_leases`);
  }
}
