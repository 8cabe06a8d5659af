import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Customer controls (docs in README "Credits and billing"):
 * - accounts: a sequence number, the key of the admin's paged account listing;
 * - account settings: a daily spending cap, a low-balance threshold (and whether its alert has fired
 *   since it was last re-armed) and a webhook URL;
 * - bulk jobs: the freshness asked for (`max_age`), the Idempotency-Key that created the job and the
 *   hash of its request (one job per key and account: a retry finds it, a reservation is never made twice);
 * - bulk entries: the client's reference, echoed in results;
 * - account_events: the outbox of webhook events (balance.low, bulk.completed to webhook_url). A row
 *   is written in the same statement as what caused it, so an event is never lost nor doubled by a
 *   crash; `dedupe_key` makes writing it again a no-op. Workers deliver pending rows and record the outcome.
 */
export class CustomerControls1764400000000 implements MigrationInterface {
  name = 'CustomerControls1764400000000';

  async up(q: QueryRunner): Promise<void> {
    // The key of the admin's account listing (the one keyset pager pages on a bigint), newest last.
    await q.query(`ALTER TABLE accounts ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY CONSTRAINT accounts_seq_unique UNIQUE`);
    await q.query(`
      ALTER TABLE account_settings
        ADD COLUMN daily_credit_limit    bigint CONSTRAINT account_settings_daily_credit_limit CHECK (daily_credit_limit >= 0),
        ADD COLUMN low_balance_threshold bigint CONSTRAINT account_settings_low_balance_threshold CHECK (low_balance_threshold >= 0),
        ADD COLUMN webhook_url           varchar(2048),
        -- set by the charge that crossed the threshold (one balance.low), cleared by a top-up or adjustment
        -- that leaves the balance at or above it, or by a new threshold
        ADD COLUMN low_balance_alerted   boolean NOT NULL DEFAULT false`);

    await q.query(`
      ALTER TABLE bulk_jobs
        ADD COLUMN max_age_seconds integer CONSTRAINT bulk_jobs_max_age CHECK (max_age_seconds >= 0),
        ADD COLUMN idempotency_key varchar(255),
        ADD COLUMN request_hash    char(64),
        ADD CONSTRAINT bulk_jobs_idempotency_key_unique UNIQUE (account_id, idempotency_key),
        ADD CONSTRAINT bulk_jobs_idempotency_hash CHECK ((idempotency_key IS NULL) = (request_hash IS NULL))`);
    await q.query(`ALTER TABLE bulk_entries ADD COLUMN reference varchar(64)`);

    await q.query(`
      CREATE TABLE account_events (
        id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account_id       uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        type             varchar(32) NOT NULL,
        payload          jsonb NOT NULL,
        dedupe_key       varchar(128) CONSTRAINT account_events_dedupe_key_unique UNIQUE,
        state            varchar(12) NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed', 'no_webhook')),
        attempts         integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        next_attempt_at  timestamptz NOT NULL DEFAULT now(),
        last_error       varchar(500),
        created_at       timestamptz NOT NULL DEFAULT now(),
        delivered_at     timestamptz
      )`);
    await q.query(`CREATE INDEX account_events_account_id_idx ON account_events (account_id, id DESC)`);
    await q.query(`CREATE INDEX account_events_pending_idx ON account_events (next_attempt_at) WHERE state = 'pending'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE account_events`);
    await q.query(`ALTER TABLE bulk_entries DROP COLUMN reference`);
    await q.query(`
      ALTER TABLE bulk_jobs DROP CONSTRAINT bulk_jobs_idempotency_hash, DROP CONSTRAINT bulk_jobs_idempotency_key_unique,
        DROP COLUMN request_hash, DROP COLUMN idempotency_key, DROP COLUMN max_age_seconds`);
    await q.query(`ALTER TABLE accounts DROP COLUMN seq`);
    await q.query(
      `ALTER TABLE account_settings DROP COLUMN low_balance_alerted, DROP COLUMN webhook_url, DROP COLUMN low_balance_threshold, DROP COLUMN daily_credit_limit`,
    );
  }
}
