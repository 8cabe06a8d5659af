import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One outbox for every outbound delivery (src/webhooks/): account_events now also holds the callbacks
 * of bulk jobs and watchlists, each with its `callback_url` (null: the account's webhook_url, as
 * before) and, in `payload`, the whole body the receiver gets.
 *
 * Deliveries pending at upgrade time are carried over:
 * - bulk callbacks waiting in pg-boss's webhook queue (`<BULK_QUEUE_NAME>-webhooks`, in the default
 *   queue schema `pgboss`; a custom BULK_QUEUE_SCHEMA must have its webhook queue drained before the
 *   upgrade) become outbox rows with the body the queue would have sent; the queue jobs are cancelled;
 * - watchlist_events not yet delivered nor given up become outbox rows with the body the watchlist
 *   worker would have built (the round's changes, or the pause and its message); watchlist_events,
 *   then unused, is dropped.
 * Down recreates watchlist_events with the pending watchlist callbacks moved back; bulk callbacks
 * still pending in the outbox are dropped then (SQL cannot put them back into pg-boss's queue).
 */
export class OneCallbackOutbox1764600000300 implements MigrationInterface {
  name = 'OneCallbackOutbox1764600000300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE account_events ADD COLUMN callback_url text`);

    await q.query(`
      DO $$
      BEGIN
        IF to_regclass('pgboss.job') IS NOT NULL THEN
          INSERT INTO account_events (account_id, type, payload, dedupe_key, callback_url, attempts)
          SELECT DISTINCT ON (b.id) b.account_id, 'bulk.completed', jsonb_build_object('id', b.id, 'status', b.status, 'total', b.total),
                 'bulk.callback:' || b.id, b.callback_url, 0
            FROM pgboss.job j JOIN bulk_jobs b ON b.id::text = j.data->>'jobId'
           WHERE j.name LIKE '%-webhooks' AND j.state::text IN ('created', 'retry', 'active')
             AND b.callback_url IS NOT NULL AND b.status = 'completed'
          ON CONFLICT ON CONSTRAINT account_events_dedupe_key_unique DO NOTHING;
          -- Only the jobs carried over above (same join and predicate): any other stays for its queue.
          UPDATE pgboss.job j SET state = 'cancelled', completed_on = now()
            FROM bulk_jobs b
           WHERE b.id::text = j.data->>'jobId'
             AND j.name LIKE '%-webhooks' AND j.state::text IN ('created', 'retry', 'active')
             AND b.callback_url IS NOT NULL AND b.status = 'completed';
        END IF;
      END $$`);

    await q.query(`
      INSERT INTO account_events (account_id, type, payload, dedupe_key, callback_url, created_at)
      SELECT w.account_id, ev.type,
             CASE WHEN ev.type = 'watchlist.changes' THEN
               jsonb_build_object('id', ev.id, 'event', ev.type, 'watchlist_id', ev.watchlist_id, 'round', ev.round, 'changes',
                 COALESCE((SELECT jsonb_agg(jsonb_build_object('phone', c.phone, 'reference', e.reference, 'field', c.field,
                                   'before', c.before, 'after', c.after,
                                   'detected_at', to_char(c.detected_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) ORDER BY c.id)
                             FROM watchlist_changes c JOIN watchlist_entries e ON e.id = c.entry_id
                            WHERE c.watchlist_id = ev.watchlist_id AND c.round = ev.round), '[]'::jsonb))
             WHEN ev.paused_status = 'paused_spending_limit' THEN
               jsonb_build_object('id', ev.id, 'event', ev.type, 'watchlist_id', ev.watchlist_id, 'round', ev.round,
                 'status', 'paused_spending_limit', 'message',
                 'Your daily spending limit (daily_credit_limit) cannot cover this round: it was not run (or not finished). It resumes by itself '
                 || 'after 00:00 UTC; raise the limit and PATCH the watchlist with {"paused": false} to run it now.')
             ELSE
               jsonb_build_object('id', ev.id, 'event', ev.type, 'watchlist_id', ev.watchlist_id, 'round', ev.round,
                 'status', 'paused_insufficient_credits', 'message',
                 'The balance cannot cover this round: it was not run. Top up, then PATCH the watchlist with {"paused": false}.')
             END,
             'watchlist:' || ev.watchlist_id || ':' || CASE WHEN ev.type = 'watchlist.changes' THEN 'changes:' || ev.round
                                                          ELSE 'paused:' || ev.round || ':' || ev.seq END,
             w.callback_url, ev.created_at
        FROM watchlist_events ev JOIN watchlists w ON w.id = ev.watchlist_id
       WHERE ev.delivered_at IS NULL AND ev.given_up_at IS NULL AND w.status <> 'deleted' AND w.callback_url IS NOT NULL
      ON CONFLICT ON CONSTRAINT account_events_dedupe_key_unique DO NOTHING`);
    await q.query(`DROP TABLE watchlist_events`);
  }

  async down(q: QueryRunner): Promise<void> {
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
        seq             integer NOT NULL DEFAULT 0,
        paused_status   varchar(32) CHECK (paused_status IN ('paused_insufficient_credits', 'paused_spending_limit')),
        CONSTRAINT watchlist_events_once UNIQUE (watchlist_id, type, round, seq)
      )`);
    await q.query(
      `CREATE INDEX watchlist_events_due_idx ON watchlist_events (schedule_group, next_attempt_at) WHERE delivered_at IS NULL AND given_up_at IS NULL`,
    );
    await q.query(`
      INSERT INTO watchlist_events (id, watchlist_id, type, round, schedule_group, seq, paused_status, created_at)
      SELECT (ev.payload->>'id')::uuid, w.id, ev.type, (ev.payload->>'round')::int, w.schedule_group,
             CASE WHEN ev.type = 'watchlist.paused' THEN split_part(ev.dedupe_key, ':', 5)::int ELSE 0 END,
             CASE WHEN ev.type = 'watchlist.paused' THEN ev.payload->>'status' END, ev.created_at
        FROM account_events ev JOIN watchlists w ON w.id = (ev.payload->>'watchlist_id')::uuid
       WHERE ev.callback_url IS NOT NULL AND ev.state = 'pending' AND ev.type IN ('watchlist.changes', 'watchlist.paused')
      ON CONFLICT DO NOTHING`);
    await q.query(`DELETE FROM account_events WHERE callback_url IS NOT NULL`);
    await q.query(`ALTER TABLE account_events DROP COLUMN callback_url`);
  }
}
