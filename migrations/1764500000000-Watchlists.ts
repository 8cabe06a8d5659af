import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Watchlists: numbers re-checked live on a schedule (docs: README "Watchlists").
 * - plans.max_watched_numbers: the watched numbers an account may have, across its watchlists.
 * - watchlists is also the due-time table the workers poll (`FOR UPDATE SKIP LOCKED`): a round is
 *   claimed by taking a lease, and `round` numbers the rounds, so a round is started once.
 * - An entry records the round it was charged for and the round it was checked in: a resumed round
 *   (after a crash or a lost lease) charges only entries not charged for it and writes only entries
 *   not checked in it. The charge reference is unique per (watchlist, round, entry) in the ledger.
 * - watchlist_events is the outbox of signed callbacks (changes, pauses), retried with backoff.
 */
export class Watchlists1764500000000 implements MigrationInterface {
  name = 'Watchlists1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE plans ADD COLUMN max_watched_numbers integer NOT NULL DEFAULT 10000 CHECK (max_watched_numbers >= 0)`);

    await q.query(`
      CREATE TABLE watchlists (
        id              uuid PRIMARY KEY,
        seq             bigint GENERATED ALWAYS AS IDENTITY CONSTRAINT watchlists_seq_unique UNIQUE,
        account_id      uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        name            varchar(100),
        interval        varchar(7) NOT NULL CHECK (interval IN ('daily', 'weekly', 'monthly')),
        callback_url    varchar(2048),
        status          varchar(32) NOT NULL DEFAULT 'active'
                        CHECK (status IN ('active', 'paused', 'paused_insufficient_credits', 'deleted')),
        schedule_group  varchar(50) NOT NULL,
        round           integer NOT NULL DEFAULT 0 CHECK (round >= 0),
        round_running   boolean NOT NULL DEFAULT false,
        round_checks    jsonb,
        round_cost      integer CHECK (round_cost >= 0),
        lease_until     timestamptz,
        next_check_at   timestamptz NOT NULL,
        created_at      timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT watchlists_round_fixed CHECK (NOT round_running OR (round_checks IS NOT NULL AND round_cost IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX watchlists_account_seq_idx ON watchlists (account_id, seq DESC) WHERE status <> 'deleted'`);
    await q.query(`CREATE INDEX watchlists_due_idx ON watchlists (schedule_group, next_check_at) WHERE status = 'active'`);

    await q.query(`
      CREATE TABLE watchlist_entries (
        id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        watchlist_id    uuid NOT NULL REFERENCES watchlists(id) ON DELETE CASCADE,
        phone           varchar(16) NOT NULL,
        reference       varchar(100),
        removed_at      timestamptz,
        charged_round   integer NOT NULL DEFAULT 0,
        charge_id       bigint,
        checked_round   integer NOT NULL DEFAULT 0,
        last_result     jsonb,
        last_error      varchar(32),
        checked_at      timestamptz,
        CONSTRAINT watchlist_entries_phone_unique UNIQUE (watchlist_id, phone),
        CONSTRAINT watchlist_entries_rounds CHECK (checked_round <= charged_round)
      )`);
    await q.query(`CREATE INDEX watchlist_entries_round_idx ON watchlist_entries (watchlist_id, id)`);

    await q.query(`
      CREATE TABLE watchlist_rounds (
        watchlist_id    uuid NOT NULL REFERENCES watchlists(id) ON DELETE CASCADE,
        round           integer NOT NULL CHECK (round >= 1),
        trigger         varchar(8) NOT NULL CHECK (trigger IN ('schedule', 'manual')),
        cost_per_number integer NOT NULL,
        checked         integer NOT NULL DEFAULT 0,
        failed          integer NOT NULL DEFAULT 0,
        changes         integer NOT NULL DEFAULT 0,
        started_at      timestamptz NOT NULL DEFAULT now(),
        completed_at    timestamptz,
        PRIMARY KEY (watchlist_id, round)
      )`);

    await q.query(`
      CREATE TABLE watchlist_changes (
        id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        watchlist_id    uuid NOT NULL REFERENCES watchlists(id) ON DELETE CASCADE,
        entry_id        bigint NOT NULL REFERENCES watchlist_entries(id) ON DELETE CASCADE,
        round           integer NOT NULL,
        phone           varchar(16) NOT NULL,
        field           varchar(10) NOT NULL CHECK (field IN ('status', 'carrier', 'line_type', 'is_ported', 'valid')),
        before          jsonb NOT NULL,
        after           jsonb NOT NULL,
        detected_at     timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT watchlist_changes_once UNIQUE (entry_id, round, field)
      )`);
    await q.query(`CREATE INDEX watchlist_changes_list_idx ON watchlist_changes (watchlist_id, id DESC)`);
    await q.query(`CREATE INDEX watchlist_changes_round_idx ON watchlist_changes (watchlist_id, round)`);

    await q.query(`
      CREATE TABLE watchlist_events (
        id              uuid PRIMARY KEY,
        watchlist_id    uuid NOT NULL REFERENCES watchlists(id) ON DELETE CASCADE,
        type            varchar(32) NOT NULL CHECK (type IN ('watchlist.changes', 'watchlist.paused')),
        round           integer NOT NULL,
        schedule_group  varchar(50) NOT NULL,
        attempts        integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        delivered_at    timestamptz,
        given_up_at     timestamptz,
        created_at      timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT watchlist_events_once UNIQUE (watchlist_id, type, round)
      )`);
    await q.query(`CREATE INDEX watchlist_events_due_idx ON watchlist_events (schedule_group, next_attempt_at) WHERE delivered_at IS NULL AND given_up_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE watchlist_events`);
    await q.query(`DROP TABLE watchlist_changes`);
    await q.query(`DROP TABLE watchlist_rounds`);
    await q.query(`DROP TABLE watchlist_entries`);
    await q.query(`DROP TABLE watchlists`);
    await q.query(`ALTER TABLE plans DROP COLUMN max_watched_numbers`);
  }
}
