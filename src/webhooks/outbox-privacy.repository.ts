import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/**
 * The outbox's copies of phone numbers (docs/privacy.md): a callback's payload is the body its receiver
 * gets, which for watchlist changes and bulk results names numbers. Kept as long as the outbox keeps
 * events (EVENT_RETENTION_DAYS); on an erasure, every event whose body holds the number goes, delivered
 * or not (a pending one is then never sent).
 */
@Injectable()
export class OutboxPrivacyRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Found by the keyed hashes written with each event (`hashes`, the number's, through their index);
   * events written before those were kept are read as before, among those only (their partial index;
   * they go at EVENT_RETENTION_DAYS).
   */
  async eraseNumber(e164: string, hashes: string[]): Promise<number> {
    const [gone]: [unknown[], number] = await this.db.query(
      `DELETE FROM account_events
        WHERE phone_hashes && $1::text[]
           OR (phone_hashes IS NULL AND regexp_replace(payload::text, '[^0-9]', '', 'g') LIKE '%' || $2 || '%') RETURNING 1`,
      [hashes, e164.slice(1)],
    );
    return gone.length;
  }
}
