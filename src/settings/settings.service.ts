import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { EntityManager } from 'typeorm';
import { refusedCallbackUrl } from '../common/callback-address';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { checksFromColumns, costPerCall, EnabledChecks } from '../checks/checks';
import { MAX_CREDIT_SETTING, SettingsDto, WebhookSecretRotationDto } from './dto/settings.dto';
import { SettingsRepository } from './settings.repository';

/** A change of settings: any subset of the checks and of the controls (null clears a control). */
export interface SettingsChanges {
  checks?: Partial<EnabledChecks>;
  daily_credit_limit?: number | null;
  low_balance_threshold?: number | null;
  webhook_url?: string | null;
}

/** The setting names a change may carry, for messages. */
const CHANGEABLE = 'checks, daily_credit_limit, low_balance_threshold, webhook_url';

export interface AccountChecks {
  checks: EnabledChecks;
  cost: number;
}

/** How long the secret before a rotation keeps signing callbacks (README "Callbacks"). */
export const WEBHOOK_SECRET_GRACE_SECONDS = 24 * 3600;

/** A change made on another instance is seen here within this time; on this instance at once. */
const CHECKS_CACHE_TTL_MS = 1000;

@Injectable()
export class SettingsService {
  private readonly cache = new LRUCache<string, AccountChecks>({ max: 50_000, ttl: CHECKS_CACHE_TTL_MS });

  constructor(
    private readonly settings: SettingsRepository,
    private readonly config: AppConfig,
  ) {}

  /** The hot-path question of /filter: which checks run, and what do they cost? */
  async checksFor(accountId: string): Promise<AccountChecks> {
    const cached = this.cache.get(accountId);
    if (cached) return cached;
    const settings = await this.load(accountId);
    const checks = { ...settings.checks };
    const answer = { checks, cost: costPerCall(checks, this.config.prices) };
    this.cache.set(accountId, answer);
    return answer;
  }

  /** A new account's default settings, written in the account's own transaction. */
  createDefaults(transaction: EntityManager, accountId: string): Promise<void> {
    return this.settings.createDefaults(transaction, accountId);
  }

  async get(accountId: string): Promise<SettingsDto> {
    return this.load(accountId);
  }

  /** The account's checks as stored now (uncached: for reads that must see a change at once). */
  async checksOf(accountId: string): Promise<EnabledChecks> {
    return (await this.load(accountId)).checks;
  }

  /**
   * Changes checks and controls together (customer PATCH, admin API and CLI alike). Checked here as
   * well as by the HTTP DTOs, because the CLI has no validation pipe.
   */
  async update(accountId: string, changes: SettingsChanges): Promise<SettingsDto> {
    this.checkChanges(changes);
    const { checks = {}, daily_credit_limit, low_balance_threshold, webhook_url } = changes;
    await this.settings.update(accountId, checks, {
      dailyCreditLimit: daily_credit_limit,
      lowBalanceThreshold: low_balance_threshold,
      webhookUrl: webhook_url,
    });
    this.cache.delete(accountId);
    return this.load(accountId);
  }

  /** 400 INVALID_REQUEST unless `changes` is a valid change of settings (also for callers that check before anything else). */
  checkChanges(changes: SettingsChanges): void {
    if (Object.values(changes).every((value) => value === undefined)) throw new AppError('INVALID_REQUEST', `Send at least one of ${CHANGEABLE}.`);
    requireCredits(changes.daily_credit_limit, 'daily_credit_limit');
    requireCredits(changes.low_balance_threshold, 'low_balance_threshold');
    if (changes.webhook_url !== undefined && changes.webhook_url !== null) this.requirePublicUrl(changes.webhook_url);
  }

  /** Where account events go now (null: nowhere). */
  async webhookUrl(accountId: string): Promise<string | null> {
    return (await this.load(accountId)).webhook_url;
  }

  /** The secrets a callback is signed with now: the current one, and the previous one during its grace period. */
  async webhookSecrets(accountId: string): Promise<string[]> {
    const secrets = await this.settings.findValidWebhookSecrets(accountId);
    if (secrets.length === 0) throw new AppError('NOT_FOUND', `No settings for account ${accountId}.`);
    return secrets;
  }

  /**
   * A new webhook secret at once; the current one keeps signing callbacks for WEBHOOK_SECRET_GRACE_SECONDS.
   * Audited (admin_audit, action `account.webhook_secret.rotate`) as `actor`, in the same statement.
   */
  async rotateWebhookSecret(accountId: string, actor: { name: string; requestId?: string }): Promise<WebhookSecretRotationDto> {
    const rotated = await this.settings.rotateWebhookSecret(accountId, WEBHOOK_SECRET_GRACE_SECONDS, actor);
    if (!rotated) throw new AppError('NOT_FOUND', `No settings for account ${accountId}.`);
    return { webhook_secret: rotated.secret, previous_secret_valid_until: rotated.previousValidUntil.toISOString() };
  }

  private async load(accountId: string): Promise<SettingsDto> {
    const row = await this.settings.findByAccount(accountId);
    if (!row) throw new AppError('NOT_FOUND', `No settings for account ${accountId}.`);
    const checks = checksFromColumns(row);
    return {
      checks,
      cost_per_call: costPerCall(checks, this.config.prices),
      webhook_secret: row.webhookSecret,
      daily_credit_limit: row.dailyCreditLimit,
      low_balance_threshold: row.lowBalanceThreshold,
      webhook_url: row.webhookUrl,
    };
  }

  /** The rule of bulk callback_url: http(s), and a public address unless BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS. */
  private requirePublicUrl(text: string): void {
    if (!/^https?:\/\//i.test(text) || text.length > 2048) {
      throw new AppError('INVALID_REQUEST', 'webhook_url must be an http or https URL of at most 2048 characters.');
    }
    const refused = refusedCallbackUrl(text, this.config.bulk.webhook.allowPrivateNetworks);
    if (refused) throw new AppError('INVALID_REQUEST', `webhook_url must point to a public address: ${refused}.`);
  }
}

function requireCredits(value: unknown, field: string): void {
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > MAX_CREDIT_SETTING) {
    throw new AppError('INVALID_REQUEST', `${field} must be null or an integer from 0 to ${MAX_CREDIT_SETTING}.`);
  }
}
