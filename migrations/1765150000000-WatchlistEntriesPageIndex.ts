import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The page of a watchlist's entries (GET /api/v1/watchlists/{id}) reads through an index that starts at
 * its watchlist and holds only the entries it shows (not removed), newest first: the page is the first
 * rows of the watchlist's part of it, whatever the other lists hold. Before, PostgreSQL walked the whole
 * entries table backwards by id and filtered by watchlist (a 100,000-entry list whose entries were the
 * oldest read and discarded 10,056 newer entries of other lists first); the query's shape is in
 * src/common/keyset-page.ts. The older (watchlist_id, id) index stays for the rounds, which read removed
 * entries too.
 */
export class WatchlistEntriesPageIndex1765150000000 implements MigrationInterface {
  name = 'WatchlistEntriesPageIndex1765150000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX watchlist_entries_page_idx ON watchlist_entries (watchlist_id, id DESC) WHERE removed_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX watchlist_entries_page_idx`);
  }
}
