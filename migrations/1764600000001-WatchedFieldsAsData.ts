import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A watchlist change names the answer field that changed. Which fields a watchlist compares is now
 * each check's definition (src/checks/, `watches`), so the column no longer lists the five fields of
 * the built-in checks: it takes any field name a registered check watches (lower_snake_case, like
 * check names, at most 64 characters).
 *
 * Down restores the list; changes of fields outside it (from checks added since) are deleted first,
 * since the old list cannot hold them.
 */
export class WatchedFieldsAsData1764600000001 implements MigrationInterface {
  name = 'WatchedFieldsAsData1764600000001';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE watchlist_changes DROP CONSTRAINT watchlist_changes_field_check`);
    await q.query(`ALTER TABLE watchlist_changes ALTER COLUMN field TYPE varchar(64)`);
    await q.query(`ALTER TABLE watchlist_changes ADD CONSTRAINT watchlist_changes_field_check CHECK (field ~ '^[a-z][a-z0-9_]{0,63}$')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM watchlist_changes WHERE field NOT IN ('status', 'carrier', 'line_type', 'is_ported', 'valid')`);
    await q.query(`ALTER TABLE watchlist_changes DROP CONSTRAINT watchlist_changes_field_check`);
    await q.query(`ALTER TABLE watchlist_changes ALTER COLUMN field TYPE varchar(10)`);
    await q.query(`ALTER TABLE watchlist_changes ADD CONSTRAINT watchlist_changes_field_check CHECK (field IN ('status', 'carrier', 'line_type', 'is_ported', 'valid'))`);
  }
}
