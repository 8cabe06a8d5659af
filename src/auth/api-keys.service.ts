import { Injectable, Logger } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { AccountsService } from '../accounts/accounts.service';
import { AppError } from '../common/errors';
import { ApiKey } from './api-key.entity';
import { bearerToken, displayPrefix, generateApiKey, hashApiKey, looksLikeApiKey } from './api-key-format';
import { ApiKeysRepository, KeyOwner } from './api-keys.repository';
import { AuthenticatedAccount } from './authenticated-account';

/** A revoked key or a disabled account is refused by every instance within this time. */
const OWNER_CACHE_TTL_MS = 1000;
const LAST_USED_WRITE_INTERVAL_MS = 60_000;

export interface IssuedKey {
  id: string;
  prefix: string;
  /** The key itself: shown once, never stored. */
  apiKey: string;
}

@Injectable()
export class ApiKeysService {
  private readonly logger = new Logger(ApiKeysService.name);
  private readonly owners = new LRUCache<string, KeyOwner>({ max: 50_000, ttl: OWNER_CACHE_TTL_MS });
  private readonly lastUsedWrites = new LRUCache<string, true>({ max: 50_000, ttl: LAST_USED_WRITE_INTERVAL_MS });

  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly accounts: AccountsService,
  ) {}

  async issue(accountId: string): Promise<IssuedKey> {
    const apiKey = generateApiKey();
    const row = await this.keys.insert(accountId, displayPrefix(apiKey), hashApiKey(apiKey));
    return { id: row.id, prefix: row.prefix, apiKey };
  }

  /** The guard's question: who is calling? Throws 401 INVALID_API_KEY or REVOKED_API_KEY. */
  async authenticate(authorization: string | undefined): Promise<AuthenticatedAccount> {
    const key = bearerToken(authorization);
    if (!key) throw new AppError('INVALID_API_KEY');
    if (!looksLikeApiKey(key)) throw new AppError('INVALID_API_KEY', 'Unknown API key.');
    const keyHash = hashApiKey(key);
    let owner = this.owners.get(keyHash);
    if (!owner) {
      const key = await this.keys.findByHash(keyHash);
      const account = key && (await this.accounts.callerState(key.accountId));
      if (!key || !account) throw new AppError('INVALID_API_KEY', 'Unknown API key.');
      owner = { ...key, accountDisabled: account.disabled, planName: account.plan.name, planLimit: account.plan.limit, planWindowSeconds: account.plan.windowSeconds };
      this.owners.set(keyHash, owner);
    }
    if (owner.keyStatus !== 'active') throw new AppError('REVOKED_API_KEY', 'This API key has been revoked.');
    if (owner.accountDisabled) throw new AppError('REVOKED_API_KEY', 'The account of this API key is disabled.');
    this.recordUse(owner.keyId);
    return {
      accountId: owner.accountId,
      keyId: owner.keyId,
      plan: { name: owner.planName, limit: owner.planLimit, windowSeconds: owner.planWindowSeconds },
    };
  }

  /**
   * Revokes in the transaction its caller opened (AdminService, with the audit row). The caller calls
   * `forgetKey` once it committed: forgotten earlier, a concurrent request would read the still-active
   * row through another connection and remember it as active after the commit.
   */
  revoke(keyId: string): Promise<ApiKey | null> {
    return this.keys.revoke(keyId);
  }

  /** Drops what this instance remembers of a key (after its revocation committed). */
  forgetKey(keyId: string): void {
    this.forget((owner) => owner.keyId === keyId);
  }

  findById(keyId: string): Promise<ApiKey | null> {
    return this.keys.findById(keyId);
  }

  listForAccount(accountId: string): Promise<ApiKey[]> {
    return this.keys.listByAccount(accountId);
  }

  /** Drops what this instance remembers of an account's keys (after a plan change or disable). */
  forgetAccount(accountId: string): void {
    this.forget((owner) => owner.accountId === accountId);
  }

  /** Drops what this instance remembers of every key on a plan (after its limit or window changed). */
  forgetPlan(planName: string): void {
    this.forget((owner) => owner.planName === planName);
  }

  private forget(matches: (owner: KeyOwner) => boolean): void {
    for (const [hash, owner] of this.owners.entries()) if (matches(owner)) this.owners.delete(hash);
  }

  /** last_used_at is written at most once a minute per key and instance, off the request path. */
  private recordUse(keyId: string): void {
    if (this.lastUsedWrites.has(keyId)) return;
    this.lastUsedWrites.set(keyId, true);
    this.keys.touchLastUsed(keyId).catch((error: Error) => this.logger.warn(`last_used_at not written: ${error.message}`));
  }
}
