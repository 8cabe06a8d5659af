import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';
import { AccountSettings } from './account-settings.entity';
import type { CheckOptionsChange } from '../checks/check-options';
import type { RiskSettingsChange } from './risk-settings';

export type AccountControls = Pick<AccountSettings, 'dailyCreditLimit' | 'lowBalanceThreshold' | 'webhookUrl'>;

/** A new webhook secret: 192 random bits, prefixed so that a leaked one is recognisable. */
function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64url')}`;
}

@Injectable()
export class SettingsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly txHost: TransactionHost<TypeOrmTx>,
  ) {}

  /** A new account's settings: `checks` on, the controls' defaults, a webhook secret; in the transaction AdminService opened. */
  async createDefaults(accountId: string, checks: readonly string[]): Promise<void> {
    await this.txHost.tx.query(`INSERT INTO account_settings (account_id, webhook_secret, checks) VALUES ($1, $2, $3::text[])`, [
      accountId,
      newWebhookSecret(),
      checks,
    ]);
  }

  findByAccount(accountId: string): Promise<AccountSettings | null> {
    return this.txHost.tx.getRepository(AccountSettings).findOneBy({ accountId });
  }

  /**
   * Checks and controls in one transaction; only what is given changes (null clears a control). The
   * checks turned on are added to the stored names and those turned off removed, in the statement, so
   * concurrent changes of different checks both hold.
   */
  async update(
    accountId: string,
    checks: Readonly<Record<string, boolean>>,
    controls: Partial<AccountControls>,
    risk: RiskSettingsChange = {},
    checkOptions: CheckOptionsChange = {},
  ): Promise<void> {
    const on = Object.keys(checks).filter((name) => checks[name]);
    const off = Object.keys(checks).filter((name) => !checks[name]);
    const changes: Partial<AccountSettings> = {};
    if (controls.dailyCreditLimit !== undefined) changes.dailyCreditLimit = controls.dailyCreditLimit;
    if (controls.lowBalanceThreshold !== undefined) {
      // A new threshold re-arms its alert.
      changes.lowBalanceThreshold = controls.lowBalanceThreshold;
      changes.lowBalanceAlerted = false;
    }
    if (controls.webhookUrl !== undefined) changes.webhookUrl = controls.webhookUrl;
    await this.txHost.withTransaction(async () => {
      if (on.length + off.length > 0) {
        await this.txHost.tx.query(
          `UPDATE account_settings
              SET checks = ARRAY(SELECT unnest(checks || $2::text[]) EXCEPT SELECT unnest($3::text[]) ORDER BY 1), updated_at = now()
            WHERE account_id = $1`,
          [accountId, on, off],
        );
      }
      if (Object.keys(changes).length > 0) await this.txHost.tx.getRepository(AccountSettings).update({ accountId }, changes);
      if (risk.thresholds !== undefined || risk.destinations !== undefined) {
        // Merged in the statement (a null removes the key): concurrent changes of different keys both hold.
        await this.txHost.tx.query(
          `UPDATE account_settings
              SET risk_settings = jsonb_strip_nulls(jsonb_build_object(
                    'thresholds', COALESCE(risk_settings->'thresholds', '{}'::jsonb) || $2::jsonb,
                    'destinations', COALESCE(risk_settings->'destinations', '{}'::jsonb) || $3::jsonb)),
                  updated_at = now()
            WHERE account_id = $1`,
          [accountId, JSON.stringify(risk.thresholds ?? {}), JSON.stringify(risk.destinations ?? {})],
        );
      }
      for (const [check, options] of Object.entries(checkOptions)) {
        // Merged per check in the statement (a null removes the option, an emptied check goes):
        // concurrent changes of different options both hold.
        await this.txHost.tx.query(
          `UPDATE account_settings
              SET check_options = jsonb_strip_nulls(check_options || jsonb_build_object($2::text,
                    NULLIF(jsonb_strip_nulls(COALESCE(check_options->$2, '{}'::jsonb) || $3::jsonb), '{}'::jsonb))),
                  updated_at = now()
            WHERE account_id = $1`,
          [accountId, check, JSON.stringify(options)],
        );
      }
    });
  }

  /**
   * One statement: a new secret becomes current, the current one stays valid for `graceSeconds`
   * (a rotation during a grace period ends the older secret's at once: only two are ever valid), and
   * SettingsService writes the audit row in the same transaction, so a rotation is never done
   * unaudited, nor audited undone.
   */
  async rotateWebhookSecret(
    accountId: string,
    graceSeconds: number,
  ): Promise<{ secret: string; previousValidUntil: Date } | undefined> {
    const secret = newWebhookSecret();
    const [rows]: [Array<{ previous_valid_until: Date }>] = await this.txHost.tx.query(
      `UPDATE account_settings
          SET previous_webhook_secret = webhook_secret,
              previous_webhook_secret_expires_at = now() + make_interval(secs => $3),
              webhook_secret = $2,
              updated_at = now()
        WHERE account_id = $1
      RETURNING previous_webhook_secret_expires_at AS previous_valid_until`,
      [accountId, secret, graceSeconds],
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
}
