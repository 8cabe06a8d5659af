import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import type { EntityManager } from 'typeorm';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { checksFromColumns, costPerCall, EnabledChecks } from '../checks/checks';
import { SettingsDto, WebhookSecretRotationDto } from './dto/settings.dto';
import { SettingsRepository } from './settings.repository';

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

  async update(accountId: string, checks: Partial<EnabledChecks>): Promise<SettingsDto> {
    await this.settings.updateChecks(accountId, checks);
    this.cache.delete(accountId);
    return this.load(accountId);
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
    return { checks, cost_per_call: costPerCall(checks, this.config.prices), webhook_secret: row.webhookSecret };
  }
}
