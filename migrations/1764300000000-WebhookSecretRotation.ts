import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Rotating an account's webhook secret (POST /api/v1/settings/webhook-secret) keeps the previous one
 * valid for a grace period: callbacks are signed with both until it ends, so a receiver can switch
 * secrets without losing a callback. Both columns are set together, or neither.
 */
export class WebhookSecretRotation1764300000000 implements MigrationInterface {
  name = 'WebhookSecretRotation1764300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE account_settings
        ADD COLUMN previous_webhook_secret varchar(64),
        ADD COLUMN previous_webhook_secret_expires_at timestamptz,
        ADD CONSTRAINT account_settings_previous_webhook_secret
          CHECK ((previous_webhook_secret IS NULL) = (previous_webhook_secret_expires_at IS NULL))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE account_settings
        DROP CONSTRAINT account_settings_previous_webhook_secret,
        DROP COLUMN previous_webhook_secret_expires_at,
        DROP COLUMN previous_webhook_secret`);
  }
}
