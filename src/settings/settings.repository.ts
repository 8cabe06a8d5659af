import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { DataSource, EntityManager } from 'typeorm';
import { columnsFromChecks, EnabledChecks } from '../checks/checks';
import { AccountSettings } from './account-settings.entity';

/** A new webhook secret: 192 random bits, prefixed so that a leaked one is recognisable. */
function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64url')}`;
}

@Injectable()
export class SettingsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The default settings of a new account (the columns' defaults) and its webhook secret, in the caller's transaction. */
  async createDefaults(transaction: EntityManager, accountId: string): Promise<void> {
    await transaction.query(`INSERT INTO account_settings (account_id, webhook_secret) VALUES ($1, $2)`, [
      accountId,
      newWebhookSecret(),
    ]);
  }

  findByAccount(accountId: string): Promise<AccountSettings | null> {
    return this.db.getRepository(AccountSettings).findOneBy({ accountId });
  }

  /**
   * One statement: a new secret becomes current, the current one stays valid for `graceSeconds`
   * (a rotation during a grace period ends the older secret's at once: only two are ever valid), and
   * the audit row (who, when the previous secret stops; never a secret) is written with it, so a
   * rotation is never done unaudited, nor audited undone.
   */
  async rotateWebhookSecret(
    accountId: string,
    graceSeconds: number,
    actor: { name: string; requestId?: string },
  ): Promise<{ secret: string; previousValidUntil: Date } | undefined> {
    const secret = newWebhookSecret();
    const rows: Array<{ previous_valid_until: Date }> = await this.db.query(
      `WITH rotated AS (
         UPDATE account_settings
            SET previous_webhook_secret = webhook_secret,
                previous_webhook_secret_expires_at = now() + make_interval(secs => $3),
                webhook_secret = $2,
                updated_at = now()
          WHERE account_id = $1
      RETURNING previous_webhook_secret_expires_at AS previous_valid_until
       ), audited AS (
         INSERT INTO admin_audit (actor, action, target_type, target_id, before, after, request_id)
         SELECT $4, 'account.webhook_secret.rotate', 'account', $1, NULL,
                jsonb_build_object('previous_secret_valid_until',
                  to_char(previous_valid_until AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
                $5
           FROM rotated
       )
       SELECT previous_valid_until FROM rotated`,
      [accountId, secret, graceSeconds, actor.name, actor.requestId ?? null],
    );
    return rows[0] ? { secret, previousValidUntil: rows[0].previous_valid_until } : undefined;
  }

  /**
   * The secrets that sign a callback now: the current one, then the previous one while its grace
   * lasts. A previous secret whose grace has passed is ignored and, in the same statement, erased.
   */
  async findValidWebhookSecrets(accountId: string): Promise<string[]> {
    const rows: Array<{ current: string; previous: string | null }> = await this.db.query(
      `WITH expired AS (
         UPDATE account_settings
            SET previous_webhook_secret = NULL, previous_webhook_secret_expires_at = NULL
          WHERE account_id = $1 AND previous_webhook_secret_expires_at <= now()
       )
       SELECT webhook_secret AS current,
              CASE WHEN previous_webhook_secret_expires_at > now() THEN previous_webhook_secret END AS previous
         FROM account_settings WHERE account_id = $1`,
      [accountId],
    );
    if (!rows[0]) return [];
    return rows[0].previous ? [rows[0].current, rows[0].previous] : [rows[0].current];
  }
  async updateChecks(accountId: string, checks: Partial<EnabledChecks>): Promise<void> {
    const changes = columnsFromChecks(checks);
    if (Object.keys(changes).length > 0) await this.db.getRepository(AccountSettings).update({ accountId }, changes);
  }
}
