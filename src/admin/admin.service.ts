import { Injectable, Logger } from '@nestjs/common';
import { Account } from '../accounts/account.entity';
import { AccountsService } from '../accounts/accounts.service';
import { Plan } from '../accounts/plan.entity';
import { ApiKeysService, IssuedKey } from '../auth/api-keys.service';
import { AppError } from '../common/errors';
import { isUuid } from '../common/uuid';
import { keysetPage } from '../common/keyset-page';
import { CreditsService } from '../credits/credits.service';
import { UsagePageDto } from '../credits/dto/usage.dto';
import type { WebhookSecretRotationDto } from '../settings/dto/settings.dto';
import { SettingsChanges, SettingsService } from '../settings/settings.service';
import { AdminAuditRepository, AuditRecord } from '../audit/audit.repository';
import { keyedHash } from '../common/keyed-hash';
import { E164_MESSAGE, normalizePhone } from '../common/phone';
import { AppConfig } from '../config/app-config';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';
import { ErasureService } from './erasure.service';
import { AccountDto, AccountPageDto, AccountSummaryDto, AdminBalanceDto, AuditPageDto, CreatedAccountDto, ErasureDto, PlanDto, RevokedKeyDto } from './dto/admin-responses.dto';

/** The controls an admin may set on an account's settings (the customer's own PATCH /api/v1/settings may also change checks). */
export type AccountControlChanges = Pick<SettingsChanges, 'daily_credit_limit' | 'low_balance_threshold' | 'webhook_url' | 'check_options'>;
const CONTROL_KEYS = ['daily_credit_limit', 'low_balance_threshold', 'webhook_url', 'check_options'] as const;

/** Who performs an admin action: `admin-api` with the request id, `cli:<os user>`, `bootstrap`... */
export interface AdminActor {
  name: string;
  requestId?: string;
}
/** A bare string is an actor without a request id (kept so existing callers can pass 'test', 'bootstrap'). */
export type ActorRef = string | AdminActor;

export const ADMIN_LIMITS = {
  nameLength: 200,
  reasonLength: 500,
  /** Largest credit amount one admin call may move, either way. */
  credits: 1_000_000_000_000,
  planLimit: 1_000_000,
  planWindowSeconds: 86_400,
  planMaxWatchedNumbers: 10_000_000,
  auditPageDefault: 50,
  auditPageMax: 200,
  accountPageDefault: 50,
  accountPageMax: 200,
} as const;

const SYSTEM_ACTOR: AdminActor = { name: 'system' };

/**
 * Account, key, credit and plan operations for the admin API and the admin CLI: one code path for
 * both, and every change leaves a row in the audit trail. Inputs are checked here too (the CLI has
 * no validation pipe), with the same rules as the HTTP DTOs.
 */
@Injectable()
export class AdminService {
  private readonly logger = new Logger(AdminService.name);

  constructor(
    private readonly accounts: AccountsService,
    private readonly keys: ApiKeysService,
    private readonly credits: CreditsService,
    private readonly settings: SettingsService,
    private readonly audit: AdminAuditRepository,
    private readonly txHost: TransactionHost<TypeOrmTx>,
    private readonly erasure: ErasureService,
    private readonly config: AppConfig,
  ) {}

  /**
   * Erases a number from every store (docs/privacy.md). The audit row says that it happened, who did
   * it and what changed, and names the number only by its keyed hash.
   */
  async erase(phone: unknown, by: ActorRef): Promise<ErasureDto> {
    const e164 = typeof phone === 'string' ? normalizePhone(phone) : undefined;
    if (e164 === undefined) throw new AppError('INVALID_REQUEST', E164_MESSAGE);
    const counts = await this.erasure.erase(e164);
    const phoneHash = keyedHash(this.config.dataHashKey, e164);
    await this.record(toActor(by), 'phone.erase', 'phone', phoneHash, null, counts);
    return { phone_hash: phoneHash, ...counts };
  }

  async createAccount(input: { name: string; plan?: string; credits?: number }, by: ActorRef): Promise<CreatedAccountDto> {
    const actor = toActor(by);
    const name = requireText(input.name, 'name', ADMIN_LIMITS.nameLength);
    const plan = await this.requirePlan(input.plan ?? 'free');
    const credits = input.credits ?? 0;
    if (!Number.isSafeInteger(credits) || credits < 0 || credits > ADMIN_LIMITS.credits) {
      throw new AppError('INVALID_REQUEST', `credits must be an integer from 0 to ${ADMIN_LIMITS.credits}.`);
    }
    const { account, balance, key } = await this.txHost.withTransaction(async () => {
      const created = await this.accounts.create(name, plan.name);
      await this.settings.createDefaults(created.id);
      const initial = credits > 0 ? await this.credits.adjust(created.id, credits, 'initial credits', ledgerActor(actor)) : 0;
      const issued = await this.keys.issue(created.id);
      await this.record(actor, 'account.create', 'account', created.id, null, {
        name,
        plan: plan.name,
        balance: initial,
        disabled: false,
        key: { id: issued.id, prefix: issued.prefix },
      });
      return { account: created, balance: initial, key: issued };
    });
    return { id: account.id, name: account.name, plan: account.plan, balance, api_key: key.apiKey };
  }

  async getAccount(id: string): Promise<AccountDto> {
    const account = await this.requireAccount(id);
    const [settings, keys] = await Promise.all([this.settings.get(id), this.keys.listForAccount(id)]);
    return {
      ...accountSummary(account),
      settings: {
        checks: settings.checks,
        daily_credit_limit: settings.daily_credit_limit,
        low_balance_threshold: settings.low_balance_threshold,
        webhook_url: settings.webhook_url,
        check_options: settings.check_options,
      },
      keys: keys.map((key) => ({
        id: key.id,
        prefix: key.prefix,
        status: key.status,
        created_at: key.createdAt.toISOString(),
        last_used_at: key.lastUsedAt?.toISOString() ?? null,
      })),
    };
  }

  /** Changes the plan and/or the disabled flag; the account's keys are re-read on their next request. */
  async updateAccount(id: string, changes: { plan?: string; disabled?: boolean }, by: ActorRef): Promise<AccountDto> {
    const actor = toActor(by);
    const account = await this.requireAccount(id);
    if (changes.plan === undefined && changes.disabled === undefined) {
      throw new AppError('INVALID_REQUEST', 'Send at least one of plan, disabled.');
    }
    if (changes.disabled !== undefined && typeof changes.disabled !== 'boolean') {
      throw new AppError('INVALID_REQUEST', 'disabled must be a boolean value.');
    }
    const plan = changes.plan === undefined ? undefined : await this.requirePlan(changes.plan);
    const before: Record<string, unknown> = {};
    const after: Record<string, unknown> = {};
    await this.txHost.withTransaction(async () => {
      if (plan) {
        before.plan = account.plan;
        after.plan = (await this.accounts.setPlan(id, plan.name)).plan;
      }
      if (changes.disabled !== undefined) {
        before.disabled = account.disabled;
        after.disabled = (await this.accounts.setDisabled(id, changes.disabled)).disabled;
      }
      await this.record(actor, 'account.update', 'account', id, before, after);
    });
    this.keys.forgetAccount(id);
    return this.getAccount(id);
  }

  /** The daily cap, low-balance threshold and webhook URL of an account (null clears one), in the audit trail. */
  async updateAccountControls(id: string, changes: AccountControlChanges, by: ActorRef): Promise<AccountDto> {
    const actor = toActor(by);
    const sent = CONTROL_KEYS.filter((key) => changes[key] !== undefined);
    if (sent.length === 0) throw new AppError('INVALID_REQUEST', `Send at least one of ${CONTROL_KEYS.join(', ')}.`);
    this.settings.checkChanges(changes);
    await this.requireAccount(id);
    const current = await this.settings.get(id);
    const pick = (from: typeof current) => Object.fromEntries(sent.map((key) => [key, from[key]]));
    await this.txHost.withTransaction(async () => {
      const updated = await this.settings.update(id, Object.fromEntries(sent.map((key) => [key, changes[key]])));
      await this.record(actor, 'settings.update', 'account', id, pick(current), pick(updated));
    });
    this.settings.forget(id); // after the commit, as revokeKey
    return this.getAccount(id);
  }

  /** Newest first, filtered; the one keyset pager. */
  async listAccounts(query: { limit?: number; cursor?: string; name?: string; plan?: string; disabled?: boolean; balance_below?: number }): Promise<AccountPageDto> {
    const limit = query.limit ?? ADMIN_LIMITS.accountPageDefault;
    requireInteger(limit, 'limit', 1, ADMIN_LIMITS.accountPageMax);
    const filter = { name: query.name, plan: query.plan, disabled: query.disabled, balanceBelow: query.balance_below };
    const page = await keysetPage('acct', limit, query.cursor, (rows, beforeSeq) => this.accounts.page(filter, rows, beforeSeq), (account) => account.seq);
    return { accounts: page.rows.map(accountSummary), next_cursor: page.nextCursor };
  }

  /** The account's ledger exactly as the customer sees it (GET /api/v1/usage). */
  async accountUsage(id: string, query: { limit?: number; cursor?: string }): Promise<UsagePageDto> {
    await this.requireAccount(id);
    const limit = query.limit ?? 50;
    requireInteger(limit, 'limit', 1, 100);
    return this.credits.usage(id, limit, query.cursor);
  }

  async setPlan(accountId: string, plan: string, by: ActorRef = SYSTEM_ACTOR): Promise<{ id: string; plan: string }> {
    const account = await this.updateAccount(accountId, { plan }, by);
    return { id: account.id, plan: account.plan };
  }

  setDisabled(accountId: string, disabled: boolean, by: ActorRef = SYSTEM_ACTOR): Promise<AccountDto> {
    return this.updateAccount(accountId, { disabled }, by);
  }

  /** amount > 0: a TOPUP; amount < 0: an ADJUSTMENT, refused (nothing changes) if it would go below zero. */
  async changeCredits(accountId: string, amount: number, reason: string, by: ActorRef): Promise<AdminBalanceDto> {
    const actor = toActor(by);
    await this.requireAccount(accountId);
    const why = requireText(reason, 'reason', ADMIN_LIMITS.reasonLength);
    if (!Number.isSafeInteger(amount) || amount === 0 || Math.abs(amount) > ADMIN_LIMITS.credits) {
      throw new AppError('INVALID_REQUEST', `amount must be a non-zero integer from -${ADMIN_LIMITS.credits} to ${ADMIN_LIMITS.credits}.`);
    }
    return this.txHost.withTransaction(async () => {
      const balance = await this.credits.adjust(accountId, amount, why, ledgerActor(actor));
      await this.record(actor, amount > 0 ? 'credits.top_up' : 'credits.adjust', 'account', accountId, { balance: balance - amount }, { balance, amount, reason: why });
      return { balance };
    });
  }

  async issueKey(accountId: string, by: ActorRef = SYSTEM_ACTOR): Promise<IssuedKey> {
    await this.requireAccount(accountId);
    return this.txHost.withTransaction(async () => {
      const key = await this.keys.issue(accountId);
      await this.record(toActor(by), 'key.issue', 'api_key', key.id, null, { account_id: accountId, prefix: key.prefix, status: 'active' });
      return key;
    });
  }

  /** Takes effect on this instance's next request; other instances drop their cached copy within a second. */
  async revokeKey(keyId: string, by: ActorRef = SYSTEM_ACTOR): Promise<RevokedKeyDto> {
    const existing = (await isUuid(keyId)) ? await this.keys.findById(keyId) : null;
    if (!existing) throw new AppError('NOT_FOUND', `No API key ${keyId}.`);
    const revoked = await this.txHost.withTransaction(async () => {
      const key = await this.keys.revoke(keyId);
      if (!key) throw new AppError('NOT_FOUND', `No API key ${keyId}.`);
      const before = { account_id: existing.accountId, status: existing.status };
      await this.record(toActor(by), 'key.revoke', 'api_key', key.id, before, { account_id: key.accountId, status: key.status });
      return { id: key.id, status: 'revoked' as const };
    });
    // After the commit: forgotten inside the transaction, a concurrent request could remember the key as active again.
    this.keys.forgetKey(keyId);
    return revoked;
  }

  /** A new webhook secret; the old one keeps signing callbacks for 24 h. Audited without either secret. */
  async rotateWebhookSecret(accountId: string, by: ActorRef = SYSTEM_ACTOR): Promise<WebhookSecretRotationDto> {
    await this.requireAccount(accountId);
    // The settings module audits the rotation in its transaction (the customer API rotates too).
    return this.settings.rotateWebhookSecret(accountId, toActor(by));
  }

  async listPlans(): Promise<PlanDto[]> {
    return (await this.accounts.listPlans()).map(toPlanDto);
  }

  /** New limit and window; this instance applies them at once, the others within a second. */
  async updatePlan(name: string, input: { limit: number; window_seconds: number; max_watched_numbers?: number }, by: ActorRef): Promise<PlanDto> {
    requireInteger(input.limit, 'limit', 1, ADMIN_LIMITS.planLimit);
    requireInteger(input.window_seconds, 'window_seconds', 1, ADMIN_LIMITS.planWindowSeconds);
    if (input.max_watched_numbers !== undefined) requireInteger(input.max_watched_numbers, 'max_watched_numbers', 0, ADMIN_LIMITS.planMaxWatchedNumbers);
    const before = toPlanDto(await this.accounts.getPlan(name));
    const after = await this.txHost.withTransaction(async () => {
      const updated = toPlanDto(await this.accounts.updatePlan(name, input.limit, input.window_seconds, input.max_watched_numbers));
      await this.record(toActor(by), 'plan.update', 'plan', name, before, updated);
      return updated;
    });
    this.keys.forgetPlan(name);
    return after;
  }

  async listAudit(query: { limit?: number; cursor?: string; target_id?: string }): Promise<AuditPageDto> {
    const limit = query.limit ?? ADMIN_LIMITS.auditPageDefault;
    requireInteger(limit, 'limit', 1, ADMIN_LIMITS.auditPageMax);
    const page = await keysetPage('audit', limit, query.cursor, (rows, beforeId) => this.audit.listNewestFirst(rows, beforeId, query.target_id), (entry) => entry.id);
    return { entries: page.rows, next_cursor: page.nextCursor };
  }

  countAccounts(): Promise<number> {
    return this.accounts.count();
  }

  /** Unknown and malformed ids are both simply "not found" (a malformed one never reaches Postgres). */
  private async requireAccount(id: string): Promise<Account> {
    if (!(await isUuid(id))) throw new AppError('NOT_FOUND', `No account ${id}.`);
    return this.accounts.get(id);
  }

  /** A plan named in a request body: an unknown one is a bad request, not a missing resource. */
  private async requirePlan(name: unknown): Promise<Plan> {
    const plans = await this.accounts.listPlans();
    const plan = plans.find((candidate) => candidate.name === name);
    if (!plan) {
      throw new AppError('INVALID_REQUEST', `plan must be one of ${plans.map((known) => known.name).join(', ')}.`);
    }
    return plan;
  }

  /**
   * The audit row of an action, in the action's transaction (opened by the method calling this): an
   * action whose audit row cannot be written is rolled back with it, so none stands unaudited (and a
   * client retrying a failed top-up is credited once).
   */
  private async record(actor: AdminActor, action: string, targetType: AuditRecord['targetType'], targetId: string, before: object | null, after: object | null): Promise<void> {
    await this.audit.append({ actor: actor.name, action, targetType, targetId, before, after, requestId: actor.requestId ?? null });
  }
}

function accountSummary(account: Account): AccountSummaryDto {
  return {
    id: account.id,
    name: account.name,
    plan: account.plan,
    balance: account.balance,
    disabled: account.disabled,
    created_at: account.createdAt.toISOString(),
  };
}

function toActor(by: ActorRef): AdminActor {
  return typeof by === 'string' ? { name: by } : by;
}

/** The ledger has no request id column: the actor carries it. */
function ledgerActor(actor: AdminActor): string {
  return actor.requestId ? `${actor.name}:${actor.requestId}` : actor.name;
}

function requireText(value: unknown, field: string, maxLength: number): string {
  if (typeof value !== 'string' || value.trim().length === 0 || value.length > maxLength) {
    throw new AppError('INVALID_REQUEST', `${field} must be a non-blank string of at most ${maxLength} characters.`);
  }
  return value;
}

function requireInteger(value: unknown, field: string, min: number, max: number): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new AppError('INVALID_REQUEST', `${field} must be an integer from ${min} to ${max}.`);
  }
}

function toPlanDto(plan: Plan): PlanDto {
  return { name: plan.name, limit: plan.limit, window_seconds: plan.windowSeconds, max_watched_numbers: plan.maxWatchedNumbers };
}

