import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';
import { NO_KEY_ABOVE } from '../common/keyset-page';

/** A row as the admin API lists it (AuditEntry documents it). */
export interface AuditEntry {
  id: string;
  actor: string;
  action: string;
  target_type: string;
  target_id: string;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  request_id: string | null;
  created_at: string;
}

export type AuditTargetType = 'account' | 'api_key' | 'plan' | 'phone';

export interface AuditRecord {
  actor: string;
  action: string;
  targetType: AuditTargetType;
  targetId: string;
  before: object | null;
  after: object | null;
  requestId: string | null;
}


/**
 * The admin_audit table (the audit module owns it): appended to by every audited action, in the
 * transaction of the action (the caller's service opens it), read newest first.
 */
@Injectable()
export class AdminAuditRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly txHost: TransactionHost<TypeOrmTx>,
  ) {}

  async append(record: AuditRecord): Promise<void> {
    await this.txHost.tx.query(
      `INSERT INTO admin_audit (actor, action, target_type, target_id, before, after, request_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [
        record.actor,
        record.action,
        record.targetType,
        record.targetId,
        record.before === null ? null : JSON.stringify(record.before),
        record.after === null ? null : JSON.stringify(record.after),
        record.requestId,
      ],
    );
  }

  /**
   * Up to `limit` rows older than `beforeId` (all when undefined), newest first, optionally for one target.
   * Sorted by the bigint column, not by the text alias `id` (which would order 9 after 52).
   */
  async listNewestFirst(limit: number, beforeId: string | undefined, targetId: string | undefined): Promise<AuditEntry[]> {
    const columns = 'id::text AS id, actor, action, target_type, target_id, before, after, request_id, created_at';
    const rows: Array<Omit<AuditEntry, 'created_at'> & { created_at: Date }> =
      targetId === undefined
        ? await this.db.query(
            `SELECT ${columns} FROM admin_audit WHERE id < COALESCE($1::bigint, ${NO_KEY_ABOVE}) ORDER BY admin_audit.id DESC LIMIT $2`,
            [beforeId ?? null, limit],
          )
        : // One target's page: the shape of src/common/keyset-page.ts, on admin_audit_target_id_idx.
          await this.db.query(
            `SELECT ${columns} FROM admin_audit
              WHERE target_id = ANY(ARRAY[$2::varchar]) AND id < COALESCE($1::bigint, ${NO_KEY_ABOVE})
              ORDER BY target_id, admin_audit.id DESC LIMIT $3`,
            [beforeId ?? null, targetId, limit],
          );
    return rows.map((row) => ({ ...row, created_at: row.created_at.toISOString() }));
  }

  /** Retention: up to `limit` rows created before `before` (the trail is append-only, so the oldest go first). */
  async deleteCreatedBefore(before: Date, limit: number): Promise<number> {
    const rows: Array<{ n: number }> = await this.db.query(
      `WITH gone AS (
         DELETE FROM admin_audit WHERE id IN (
           SELECT id FROM admin_audit WHERE created_at < $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [before, limit],
    );
    return rows[0].n;
  }
}
