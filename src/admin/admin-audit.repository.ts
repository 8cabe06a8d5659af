import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditEntryDto } from './dto/admin-responses.dto';

export type AuditTargetType = 'account' | 'api_key' | 'plan';

export interface AuditRecord {
  actor: string;
  action: string;
  targetType: AuditTargetType;
  targetId: string;
  before: object | null;
  after: object | null;
  requestId: string | null;
}


/** The admin_audit table: appended to by every admin action, read newest first. */
@Injectable()
export class AdminAuditRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async append(record: AuditRecord): Promise<void> {
    await this.db.query(
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
  async listNewestFirst(limit: number, beforeId: string | undefined, targetId: string | undefined): Promise<AuditEntryDto[]> {
    const rows: Array<Omit<AuditEntryDto, 'created_at'> & { created_at: Date }> = await this.db.query(
      `SELECT id::text AS id, actor, action, target_type, target_id, before, after, request_id, created_at
         FROM admin_audit
        WHERE ($1::bigint IS NULL OR id < $1::bigint) AND ($2::varchar IS NULL OR target_id = $2::varchar)
        ORDER BY admin_audit.id DESC
        LIMIT $3`,
      [beforeId ?? null, targetId ?? null, limit],
    );
    return rows.map((row) => ({ ...row, created_at: row.created_at.toISOString() }));
  }
}
