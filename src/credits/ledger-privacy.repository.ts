import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/**
 * The ledger's phone column (docs/privacy.md): written masked by every charge, but rows from before
 * that, or from any writer that stored a whole number, are masked by retention and on erasure. Only
 * `phone` changes: amounts, references and balances are never touched, so balance = sum still holds.
 */
@Injectable()
export class LedgerPrivacyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Up to `limit` rows created before `before` whose phone is not masked yet (the partial index holds only those). */
  async unmaskedBefore(before: Date, limit: number): Promise<Array<{ id: string; phone: string }>> {
    return this.db.query(
      `SELECT id::text, phone FROM ledger_entries
        WHERE phone IS NOT NULL AND phone NOT LIKE '%*' AND created_at < $1
        ORDER BY created_at LIMIT $2`,
      [before, limit],
    );
  }

  /** Rows whose phone is still this whole number, any age. */
  async unmaskedOf(e164: string): Promise<Array<{ id: string; phone: string }>> {
    return this.db.query(`SELECT id::text, phone FROM ledger_entries WHERE phone IS NOT NULL AND phone NOT LIKE '%*' AND phone = $1`, [e164]);
  }

  /** Writes the masked forms; a row whose phone changed meanwhile (another instance masked it) is left alone. */
  async setMasked(rows: Array<{ id: string; phone: string; masked: string }>): Promise<number> {
    if (rows.length === 0) return 0;
    const written: Array<{ n: number }> = await this.db.query(
      `WITH masked AS (
         UPDATE ledger_entries l SET phone = m.masked
           FROM unnest($1::bigint[], $2::text[], $3::text[]) AS m(id, phone, masked)
          WHERE l.id = m.id AND l.phone = m.phone
         RETURNING 1)
       SELECT count(*)::int AS n FROM masked`,
      [rows.map((row) => row.id), rows.map((row) => row.phone), rows.map((row) => row.masked)],
    );
    return written[0].n;
  }
}
