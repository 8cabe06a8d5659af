import { Injectable } from '@nestjs/common';
import { AdminAuditRepository } from '../audit/audit.repository';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';
import { requireCallbackUrl } from '../common/callback-address';
import { RefreshAheadCache } from '../common/refresh-ahead-cache';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { checksOffered } from '../config/upstream-adapters';
import { CheckRegistry } from '../checks/check-registry';
import type { CheckOptions } from '../checks/check-definition';
import { checkOptionsChangeProblems, checkOptionsOf, type CheckOptionsChange } from '../checks/check-options';
import { EnabledChecks, NO_CHECK_ENABLED } from '../checks/checks';
import type { SettingsDto, WebhookSecretRotationDto } from './dto/settings.dto';
import { knowCheckNames, knowCheckOptions, MAX_CREDIT_SETTING } from './known-checks';
import { SettingsRepository } from './settings.repository';
import { AccountRiskSettings, effectiveRiskSettings, riskChangeProblems, RiskSettingsChange, thresholdOrderProblem } from './risk-settings';

/** A change of settings: any subset of the checks and of the controls (null clears a control). */
export interface SettingsChanges {
  checks?: Readonly<Record<string, boolean>>;
  daily_credit_limit?: number | null;
  low_balance_threshold?: number | null;
  webhook_url?: string | null;
  /** The risk verdict's thresholds and destination adjustments (src/settings/risk-settings.ts). */
  risk?: RiskSettingsChange;
  /** Options of checks that declare them (`{ <check>: { <option>: value } }`); null goes back to an option's default. */
  check_options?: CheckOptionsChange;
}

/** The setting names a change may carry, for messages. */
const CHANGEABLE = 'checks, daily_credit_limit, low_balance_threshold, webhook_url, risk, check_options';

export interface AccountChecks {
  checks: EnabledChecks;
  cost: number;
  /** The option values of every check that declares options (the account's, else the defaults): lookups ask with them. */
  options: CheckOptions;
}

/** What the request path reads of an account's settings, cached together (one read for both). */
interface HotSettings extends AccountChecks {
  risk: AccountRiskSettings;
}

/** How long the secret before a rotation keeps signing callbacks (README "Callbacks"). */
export const WEBHOOK_SECRET_GRACE_SECONDS = 24 * 3600;

/** A change made on another instance is seen here within this time; on this instance at once. */
const CHECKS_CACHE_TTL_MS = 1000;
/** From this age on, the checks are read again behind the calls instead of in front of them (RefreshAheadCache). */
const CHECKS_REFRESH_AFTER_MS = 750;

@Injectable()
export class SettingsService {
  private readonly cache = new RefreshAheadCache<HotSettings>({
    max: 50_000,
    maxAgeMs: CHECKS_CACHE_TTL_MS,
    refreshAfterMs: CHECKS_REFRESH_AFTER_MS,
    // Committed settings, whichever call's transaction the read happens to start in (a refresh outlives it).
    load: (accountId) =>
      this.txHost.withoutTransaction(async () => {
        const settings = await this.load(accountId);
        return { checks: settings.checks, cost: settings.cost_per_call, risk: settings.risk, options: settings.check_options };
      }),
  });

  /** The checks something can answer here: a configured provider's adapter offers it, or it was registered with its own adapter. */
  private readonly offered: ReadonlySet<string>;

  constructor(
    private readonly settings: SettingsRepository,
    private readonly audit: AdminAuditRepository,
    private readonly txHost: TransactionHost<TypeOrmTx>,
    private readonly config: AppConfig,
    private readonly registry: CheckRegistry,
  ) {
    knowCheckNames(registry.names());
    knowCheckOptions(registry.all());
    this.offered = new Set([
      ...checksOffered(config.provider.upstreams.map((upstream) => upstream.adapter)),
      ...registry.names().filter((name) => registry.adapterOf(name) !== undefined),
    ]);
  }

  /** The hot-path question of every paid lookup: which checks run, and what do they cost? */
  async checksFor(accountId: string): Promise<AccountChecks> {
    // `load` throws NOT_FOUND rather than answering nothing.
    return (await this.cache.get(accountId))!;
  }

  /** The risk verdict's thresholds and destination adjustments of an account (cached like `checksFor`). */
  async riskFor(accountId: string): Promise<AccountRiskSettings> {
    return (await this.cache.get(accountId))!.risk;
  }

  /** `checksFor`, refusing an account with no check enabled (400 INVALID_REQUEST): nothing to look up, nothing to charge. */
  async requireChecks(accountId: string): Promise<AccountChecks> {
    const answer = await this.checksFor(accountId);
    this.requireAnyCheck(answer.checks);
    return answer;
  }

  /** 400 INVALID_REQUEST when no check is on (for checks read earlier with `checksFor`). */
  requireAnyCheck(checks: EnabledChecks): void {
    if (this.registry.enabled(checks).length === 0) throw new AppError('INVALID_REQUEST', NO_CHECK_ENABLED);
  }

  /** A new account's default settings (the registry's default checks), written in the account's transaction (AdminService opens it). */
  createDefaults(accountId: string): Promise<void> {
    return this.settings.createDefaults(accountId, this.registry.defaultNames());
  }

  async get(accountId: string): Promise<SettingsDto> {
    return this.load(accountId);
  }

  /**
   * Changes checks and controls together (customer PATCH, admin API and CLI alike). Checked here as
   * well as by the HTTP DTOs, because the CLI has no validation pipe.
   */
  async update(accountId: string, changes: SettingsChanges): Promise<SettingsDto> {
    this.checkChanges(changes);
    const { checks = {}, daily_credit_limit, low_balance_threshold, webhook_url, risk, check_options } = changes;
    if (risk?.thresholds !== undefined) {
      const problem = thresholdOrderProblem((await this.settings.findByAccount(accountId))?.riskSettings, risk);
      if (problem) throw new AppError('INVALID_REQUEST', `${problem}.`);
    }
    await this.settings.update(
      accountId,
      checks,
      { dailyCreditLimit: daily_credit_limit, lowBalanceThreshold: low_balance_threshold, webhookUrl: webhook_url },
      risk,
      check_options,
    );
    // Inside a caller's transaction (AdminService) the caller also calls `forget` after the commit.
    this.cache.delete(accountId);
    return this.load(accountId);
  }

  /** Drops this instance's cached checks of an account, for a caller whose transaction changed them and committed. */
  forget(accountId: string): void {
    this.cache.delete(accountId);
  }

  /** 400 INVALID_REQUEST unless `changes` is a valid change of settings (also for callers that check before anything else). */
  checkChanges(changes: SettingsChanges): void {
    if (Object.values(changes).every((value) => value === undefined)) throw new AppError('INVALID_REQUEST', `Send at least one of ${CHANGEABLE}.`);
    if (changes.checks !== undefined) this.requireCheckSwitches(changes.checks);
    requireCredits(changes.daily_credit_limit, 'daily_credit_limit');
    requireCredits(changes.low_balance_threshold, 'low_balance_threshold');
    if (changes.webhook_url !== undefined && changes.webhook_url !== null) this.requirePublicUrl(changes.webhook_url);
    if (changes.risk !== undefined) {
      const problems = riskChangeProblems(changes.risk);
      if (problems.length > 0) throw new AppError('INVALID_REQUEST', `${problems.join('; ')}.`);
    }
    if (changes.check_options !== undefined) {
      const problems = checkOptionsChangeProblems(this.registry.all(), changes.check_options);
      if (problems.length > 0) throw new AppError('INVALID_REQUEST', `${problems.join('; ')}.`);
    }
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
   * Audited (admin_audit, action `account.webhook_secret.rotate`, never a secret) as `actor`, in the
   * same transaction: the rotation and its audit row commit together (joins the caller's, AdminService's).
   */
  async rotateWebhookSecret(accountId: string, actor: { name: string; requestId?: string }): Promise<WebhookSecretRotationDto> {
    const rotated = await this.txHost.withTransaction(async () => {
      const done = await this.settings.rotateWebhookSecret(accountId, WEBHOOK_SECRET_GRACE_SECONDS);
      if (!done) return undefined;
      await this.audit.append({
        actor: actor.name,
        action: 'account.webhook_secret.rotate',
        targetType: 'account',
        targetId: accountId,
        before: null,
        after: { previous_secret_valid_until: done.previousValidUntil.toISOString() },
        requestId: actor.requestId ?? null,
      });
      return done;
    });
    if (!rotated) throw new AppError('NOT_FOUND', `No settings for account ${accountId}.`);
    return { webhook_secret: rotated.secret, previous_secret_valid_until: rotated.previousValidUntil.toISOString() };
  }

  private async load(accountId: string): Promise<SettingsDto> {
    const row = await this.settings.findByAccount(accountId);
    if (!row) throw new AppError('NOT_FOUND', `No settings for account ${accountId}.`);
    const checks = this.registry.fromEnabledNames(row.checks);
    return {
      checks,
      cost_per_call: this.registry.costOf(checks),
      webhook_secret: row.webhookSecret,
      daily_credit_limit: row.dailyCreditLimit,
      low_balance_threshold: row.lowBalanceThreshold,
      webhook_url: row.webhookUrl,
      risk: effectiveRiskSettings(row.riskSettings),
      check_options: checkOptionsOf(this.registry.all(), row.checkOptions),
    };
  }

  /**
   * `checks` of a change: an object of registered check names, each true or false; a check turned on
   * must be one that something here answers (turning one off is always allowed).
   */
  private requireCheckSwitches(checks: unknown): void {
    if (checks === null || typeof checks !== 'object' || Array.isArray(checks)) throw new AppError('INVALID_REQUEST', 'checks must be an object.');
    const problems = Object.entries(checks).map(([name, value]) => {
      if (!this.registry.has(name)) return `unknown field "checks.${name}"`;
      if (value === null) return `checks.${name} must not be null (leave it out to keep its value)`;
      if (typeof value !== 'boolean') return `checks.${name} must be a boolean value`;
      if (value && !this.offered.has(name)) {
        const providers = this.config.provider.upstreams.map((upstream) => upstream.id).join(', ');
        return `checks.${name} cannot be turned on: no configured lookup provider offers it (providers here: ${providers})`;
      }
      return undefined;
    });
    const found = problems.filter((problem) => problem !== undefined);
    if (found.length > 0) throw new AppError('INVALID_REQUEST', `${found.join('; ')}.`);
  }

  /** The rule of webhook_url: http(s), at most 2048 characters, and the address rule of every callback URL. */
  private requirePublicUrl(text: string): void {
    if (!/^https?:\/\//i.test(text) || text.length > 2048) {
      throw new AppError('INVALID_REQUEST', 'webhook_url must be an http or https URL of at most 2048 characters.');
    }
    requireCallbackUrl('webhook_url', text, this.config.callbacks);
  }
}

function requireCredits(value: unknown, field: string): void {
  if (value === undefined || value === null) return;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > MAX_CREDIT_SETTING) {
    throw new AppError('INVALID_REQUEST', `${field} must be null or an integer from 0 to ${MAX_CREDIT_SETTING}.`);
  }
}
