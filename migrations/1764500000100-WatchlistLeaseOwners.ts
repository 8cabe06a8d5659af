import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Fixes from the review of watchlists (docs: README "Watchlists").
 * - watchlists.lease_owner: the claim that holds the lease. Renewing, releasing, finishing, pausing,
 *   charging and recording a round all require it, so a worker whose lease ran out and was claimed
 *   by another stops instead of running the same round beside it.
 * - watchlists.idempotency_key_id (unique) and creation_answer: the creation's Idempotency-Key is
 *   written with the watchlist in one transaction, so one key creates one watchlist whatever happens
 *   to the key's stored answer; a retry replays creation_answer.
 * - watchlist_entries.last_checks: the checks that produced last_result; a change is only a
 *   difference in a field produced by checks enabled in both rounds.
 * - watchlists.pause_seq and watchlist_events.seq: each pause of a round has its own event.
 */
export class WatchlistLeaseOwners1764500000100 implements MigrationInterface {
  name = 'WatchlistLeaseOwners1764500000100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE watchlists ADD COLUMN lease_owner uuid`);
    await q.query(`ALTER TABLE watchlists ADD COLUMN idempotency_key_id uuid`);
    await q.query(`ALTER TABLE watchlists ADD COLUMN creation_answer text`);
    await q.query(`ALTER TABLE watchlists ADD COLUMN pause_seq integer NOT NULL DEFAULT 0`);
    await q.query(`CREATE UNIQUE INDEX watchlists_idempotency_key_unique ON watchlists (idempotency_key_id) WHERE idempotency_key_id IS NOT NULL`);
    await q.query(`ALTER TABLE watchlist_entries ADD COLUMN last_checks jsonb`);
    await q.query(`ALTER TABLE watchlist_events ADD COLUMN seq integer NOT NULL DEFAULT 0`);
    await q.query(`ALTER TABLE watchlist_events DROP CONSTRAINT watchlist_events_once`);
    await q.query(`ALTER TABLE watchlist_events ADD CONSTRAINT watchlist_events_once UNIQUE (watchlist_id, type, round, seq)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DELETE FROM watchlist_events WHERE seq > 0`);
    await q.query(`ALTER TABLE watchlist_events DROP CONSTRAINT watchlist_events_once`);
    await q.query(`ALTER TABLE watchlist_events ADD CONSTRAINT watchlist_events_once UNIQUE (watchlist_id, type, round)`);
    await q.query(`ALTER TABLE watchlist_events DROP COLUMN seq`);
    await q.query(`ALTER TABLE watchlist_entries DROP COLUMN last_checks`);
    await q.query(`DROP INDEX watchlists_idempotency_key_unique`);
    await q.query(`ALTER TABLE watchlists DROP COLUMN pause_seq`);
    await q.query(`ALTER TABLE watchlists DROP COLUMN creation_answer`);
    await q.query(`ALTER TABLE watchlists DROP COLUMN idempotency_key_id`);
    await q.query(`ALTER TABLE watchlists DROP COLUMN lease_owner`);
  }
}
