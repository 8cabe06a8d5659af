import { Column, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { bigintToNumber } from '../common/bigint.transformer';
import type { StoredCheckOptions } from '../checks/check-options';
import type { StoredRiskSettings } from './risk-settings';

@Entity('account_settings')
export class AccountSettings {
  @PrimaryColumn({ name: 'account_id', type: 'uuid' })
  accountId: string;

  /** The names of the enabled checks (src/checks/); a check not listed is off. */
  @Column({ type: 'text', array: true, default: () => "'{}'" })
  checks: string[];

  @Column({ name: 'webhook_secret', type: 'varchar', length: 64 })
  webhookSecret: string;

  /** The secret before the last rotation, still signing callbacks until previousWebhookSecretExpiresAt. */
  @Column({ name: 'previous_webhook_secret', type: 'varchar', length: 64, nullable: true })
  previousWebhookSecret: string | null;

  @Column({ name: 'previous_webhook_secret_expires_at', type: 'timestamptz', nullable: true })
  previousWebhookSecretExpiresAt: Date | null;

  /** Credits the account may be charged per UTC day; null: no cap. Enforced by the charge statements. */
  @Column({ name: 'daily_credit_limit', type: 'bigint', nullable: true, transformer: bigintToNumber })
  dailyCreditLimit: number | null;

  /** A charge taking the balance from at or above this to below it records a balance.low event; null: none. */
  @Column({ name: 'low_balance_threshold', type: 'bigint', nullable: true, transformer: bigintToNumber })
  lowBalanceThreshold: number | null;

  /** Set by the charge that crossed the threshold; cleared by a top-up back at or above it, or a new threshold. */
  @Column({ name: 'low_balance_alerted', type: 'boolean', default: false })
  lowBalanceAlerted: boolean;

  /** Where account events (balance.low, bulk.completed without a callback_url) are POSTed, signed; null: nowhere. */
  @Column({ name: 'webhook_url', type: 'varchar', length: 2048, nullable: true })
  webhookUrl: string | null;

  /** The account's tuning of the risk verdict (src/settings/risk-settings.ts): the thresholds it set, its destination adjustments. */
  @Column({ name: 'risk_settings', type: 'jsonb', default: () => "'{}'" })
  riskSettings: StoredRiskSettings;

  /** The options of checks the account set (`{ <check>: { <option>: value } }`); the defaults are each check's definition's (src/checks/). */
  @Column({ name: 'check_options', type: 'jsonb', default: () => "'{}'" })
  checkOptions: StoredCheckOptions;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
