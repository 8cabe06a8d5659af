import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A watchlist round refused by the daily spending cap pauses the watchlist as `paused_spending_limit`
 * (src/watchlists/rounds.repository.ts `pauseRefused`) until the next 00:00 UTC, when the workers'
 * claim resumes it (hence the partial index beside watchlists_due_idx). watchlist_events.paused_status
 * says which pause a `watchlist.paused` event reports (null: before this migration, always for credits).
 */
export class WatchlistSpendingLimitPause1764500000200 implements MigrationInterface {
  name = 'WatchlistSpendingLimitPause1764500000200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE watchlists DROP CONSTRAINT watchlists_status_check`);
    await q.query(`
      ALTER TABLE watchlists ADD CONSTRAINT watchlists_status_check
        CHECK (status IN ('active', 'paused', 'paused_insufficient_credits', 'paused_spending_limit', 'deleted'))`);
    await q.query(`CREATE INDEX watchlists_cap_resume_idx ON watchlists (schedule_group, next_check_at) WHERE status = 'paused_spending_limit'`);
    await q.query(`
      ALTER TABLE watchlist_events ADD COLUMN paused_status varchar(32)
        CHECK (paused_status IN ('paused_insufficient_credits', 'paused_spending_limit'))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE watchlist_events DROP COLUMN paused_status`);
    await q.query(`DROP INDEX watchlists_cap_resume_idx`);
    await q.query(`UPDATE watchlists SET status = 'paused_insufficient_credits' WHERE status = 'paused_spending_limit'`);
    await q.query(`ALTER TABLE watchlists DROP CONSTRAINT watchlists_status_check`);
    await q.query(`
      ALTER TABLE watchlists ADD CONSTRAINT watchlists_status_check
        CHECK (status IN ('active', 'paused', 'paused_insufficient_credits', 'deleted'))`);
  }
}
