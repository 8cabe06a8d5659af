import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Plans, accounts, API keys, per-account settings and the credits ledger.
 * Money rules live in the schema too: a balance can never go below zero, every ledger row has a
 * unique reference (a retried charge or refund cannot be written twice) and a charge is refunded
 * at most once.
 */
export class InitialSchema1763800000000 implements MigrationInterface {
  name = 'InitialSchema1763800000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE plans (
        name            varchar(32) PRIMARY KEY,
        "limit"         integer NOT NULL CHECK ("limit" > 0),
        window_seconds  integer NOT NULL CHECK (window_seconds > 0),
        created_at      timestamptz NOT NULL DEFAULT now(),
        updated_at      timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      INSERT INTO plans (name, "limit", window_seconds) VALUES
        ('free', 5, 1), ('standard', 50, 1), ('enterprise', 1000, 1)`);

    await q.query(`
      CREATE TABLE accounts (
        id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name        varchar(200) NOT NULL,
        plan        varchar(32) NOT NULL REFERENCES plans(name) ON UPDATE CASCADE,
        balance     bigint NOT NULL DEFAULT 0 CONSTRAINT accounts_balance_not_negative CHECK (balance >= 0),
        disabled    boolean NOT NULL DEFAULT false,
        created_at  timestamptz NOT NULL DEFAULT now()
      )`);

    await q.query(`
      CREATE TABLE api_keys (
        id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id    uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        prefix        varchar(16) NOT NULL,
        key_hash      char(64) NOT NULL CONSTRAINT api_keys_key_hash_unique UNIQUE,
        status        varchar(8) NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'revoked')),
        created_at    timestamptz NOT NULL DEFAULT now(),
        revoked_at    timestamptz,
        last_used_at  timestamptz
      )`);
    await q.query(`CREATE INDEX api_keys_account_id_idx ON api_keys (account_id)`);

    await q.query(`
      CREATE TABLE account_settings (
        account_id      uuid PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
        network_status  boolean NOT NULL DEFAULT true,
        line_type       boolean NOT NULL DEFAULT false,
        portability     boolean NOT NULL DEFAULT false,
        webhook_secret  varchar(64) NOT NULL,
        updated_at      timestamptz NOT NULL DEFAULT now()
      )`);

    await q.query(`
      CREATE TABLE ledger_entries (
        id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        account_id     uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        type           varchar(10) NOT NULL CHECK (type IN ('TOPUP', 'CHARGE', 'REFUND', 'ADJUSTMENT')),
        amount         bigint NOT NULL,
        balance_after  bigint NOT NULL CHECK (balance_after >= 0),
        reference      varchar(128) NOT NULL CONSTRAINT ledger_entries_reference_unique UNIQUE,
        refund_of      bigint CONSTRAINT ledger_entries_refund_of_unique UNIQUE REFERENCES ledger_entries(id),
        phone          varchar(32),
        source         varchar(64),
        reason         varchar(500),
        actor          varchar(200),
        settled_at     timestamptz,
        created_at     timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT ledger_entries_sign CHECK (
          (type = 'TOPUP' AND amount > 0) OR (type = 'CHARGE' AND amount <= 0) OR
          (type = 'REFUND' AND amount >= 0 AND refund_of IS NOT NULL) OR (type = 'ADJUSTMENT' AND amount <> 0))
      )`);
    await q.query(`CREATE INDEX ledger_entries_account_id_id_idx ON ledger_entries (account_id, id DESC)`);
    await q.query(`
      CREATE INDEX ledger_entries_unsettled_charges_idx ON ledger_entries (created_at)
      WHERE type = 'CHARGE' AND settled_at IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE ledger_entries`);
    await q.query(`DROP TABLE account_settings`);
    await q.query(`DROP TABLE api_keys`);
    await q.query(`DROP TABLE accounts`);
    await q.query(`DROP TABLE plans`);
  }
}
