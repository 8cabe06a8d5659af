import { Injectable, Logger, Optional } from '@nestjs/common';
import { normalizeIp } from '@nestjs/throttler';
import type { Request } from 'express';
import { LRUCache } from 'lru-cache';
import { AuthenticationAttempts, Credential } from '../auth/api-key.guard';
import { Clock } from '../common/clock';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics';
import { FailedAuthCounter, MemoryFailedAuthCounter, RedisFailedAuthCounter } from './failed-auth.counter';
import { failedAuthLimitMessage, judge, Verdict } from './rate-limit-policy';
import { RateLimitStorage } from './rate-limit-storage';
import { RedisRateLimitStorage } from './redis-rate-limit.storage';

const CREDENTIAL_NAMES: Record<Credential, string> = { api_key: 'API key', admin_token: 'admin token' };

/**
 * IP_RATE_LIMIT failed authentications per IP_RATE_WINDOW_SECONDS per client address and per kind
 * of credential: wrong customer keys and wrong admin tokens are counted apart. Past the limit the
 * address gets 429 instead of 401 for a wrong credential; a right one is always verified and served
 * (see limitedAttempt in src/auth/api-key.guard.ts), so wrong attempts can never lock out the
 * administrator or a customer, whatever address they share.
 * Counted in Redis when configured (one count for every instance), in this process otherwise, and in
 * this process too while Redis is unreachable (each instance then limits on its own). Each refusal
 * is counted in `phone_filter_failed_auth_refused_total`; the first of each window per address is
 * logged (the address and the credential's kind, never the secret).
 */
@Injectable()
export class FailedAuthLimiter extends AuthenticationAttempts {
  private readonly logger = new Logger(FailedAuthLimiter.name);
  private readonly limit: number;
  private readonly windowSeconds: number;
  private readonly shared: FailedAuthCounter | undefined;
  private readonly local: MemoryFailedAuthCounter;

  /** Addresses whose limiting was logged in their current window: one line per address and window, not one per guess. */
  private readonly logged: LRUCache<string, true>;

  constructor(
    storage: RateLimitStorage,
    config: AppConfig,
    clock: Clock,
    @Optional() private readonly metrics?: Metrics,
  ) {
    super();
    this.local = new MemoryFailedAuthCounter(clock);
    ({ limit: this.limit, windowSeconds: this.windowSeconds } = config.ipRateLimit);
    this.logged = new LRUCache({ max: 10_000, ttl: this.windowSeconds * 1000 });
    this.shared = storage instanceof RedisRateLimitStorage ? new RedisFailedAuthCounter(storage.redis) : undefined;
  }

  async count(request: Request, credential: Credential): Promise<Record<string, string>> {
    const key = counterKey(request, credential);
    const window = await this.counted((counter) => counter.add(key, this.windowSeconds * 1000));
    const verdict = judge(this.limit, window);
    this.refuseIfLimited(verdict, key, credential);
    return verdict.headers;
  }

  private refuseIfLimited(verdict: Verdict, key: string, credential: Credential): void {
    if (!verdict.limited) return;
    this.metrics?.failedAuthenticationRefused(credential);
    if (!this.logged.has(key)) {
      this.logged.set(key, true, { ttl: verdict.retryAfterSeconds * 1000 });
      this.logger.warn(
        `failed-authentication limit reached: address ${key.slice(key.indexOf(':ip:') + ':ip:'.length)} used its ${this.limit} failed attempts with an ` +
          `${CREDENTIAL_NAMES[credential]} per ${this.windowSeconds} s; its ${CREDENTIAL_NAMES[credential]} attempts are refused for ${verdict.retryAfterSeconds} s`,
      );
    }
    throw new AppError('RATE_LIMITED', failedAuthLimitMessage(this.limit, this.windowSeconds, verdict.retryAfterSeconds), {
      ...verdict.headers,
      'Retry-After': String(verdict.retryAfterSeconds),
    });
  }

  /** Redis when configured; this process's count when Redis fails, so an outage does not open unlimited guessing. */
  private async counted<T>(work: (counter: FailedAuthCounter) => Promise<T>): Promise<T> {
    if (this.shared) {
      try {
        return await work(this.shared);
      } catch (error) {
        this.logger.debug(`failed-authentication count kept in this process: ${(error as Error).message}`);
      }
    }
    return work(this.local);
  }
}

/** Per credential kind and address; IPv6 addresses count per /64, as one client usually holds a whole /64. */
function counterKey(request: Request, credential: Credential): string {
  return `failed-auth:${credential}:ip:${normalizeIp(request.ip ?? request.socket.remoteAddress ?? 'unknown')}`;
}
