import { Injectable, Logger, Optional } from '@nestjs/common';
import { normalizeIp } from '@nestjs/throttler';
import type { Request } from 'express';
import { LRUCache } from 'lru-cache';
import { AuthenticationAttempts, Credential } from '../auth/api-key.guard';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics';
import { COUNT_ONLY, failedAuthLimitMessage, judge, Verdict } from './rate-limit-policy';
import { RateLimitStorage } from './rate-limit-storage';

const THROTTLER_NAME = 'failed-auth';

const CREDENTIAL_NAMES: Record<Credential, string> = { api_key: 'API key', admin_token: 'admin token' };

/**
 * IP_RATE_LIMIT failed authentications per IP_RATE_WINDOW_SECONDS per client address, whatever the
 * credential (customer API keys and the admin token share one count). Past it, the address gets 429
 * before its credential is looked at, so a guess can be neither checked nor confirmed; a valid one used
 * from that same address waits too (we cannot tell it from a guess without checking it). Successful
 * calls are not counted, and other addresses are never affected. Each refusal is counted in
 * `phone_filter_failed_auth_refused_total`; the first of each window per address is logged (the
 * address and the credential's kind, never the secret).
 */
@Injectable()
export class FailedAuthLimiter extends AuthenticationAttempts {
  private readonly logger = new Logger(FailedAuthLimiter.name);
  private readonly limit: number;
  private readonly windowSeconds: number;

  /** Addresses whose limiting was logged in their current window: one line per address and window, not one per guess. */
  private readonly logged: LRUCache<string, true>;

  constructor(
    private readonly storage: RateLimitStorage,
    config: AppConfig,
    @Optional() private readonly metrics?: Metrics,
  ) {
    super();
    ({ limit: this.limit, windowSeconds: this.windowSeconds } = config.ipRateLimit);
    this.logged = new LRUCache({ max: 10_000, ttl: this.windowSeconds * 1000 });
  }

  async beforeAttempt(request: Request, credential: Credential): Promise<void> {
    const key = addressKey(request);
    const window = await this.orNothing(() => this.storage.peek(key, THROTTLER_NAME));
    // The next failure would go over: refuse the attempt as if it had been made.
    if (window) this.refuseIfLimited(judge(this.limit, { ...window, hits: window.hits + 1 }), key, credential);
  }

  async afterFailure(request: Request, credential: Credential): Promise<void> {
    const key = addressKey(request);
    const windowMs = this.windowSeconds * 1000;
    const record = await this.orNothing(() => this.storage.increment(key, windowMs, COUNT_ONLY, windowMs, THROTTLER_NAME));
    if (record) this.refuseIfLimited(judge(this.limit, { hits: record.totalHits, secondsToReset: record.timeToExpire }), key, credential);
  }

  private refuseIfLimited(verdict: Verdict, key: string, credential: Credential): void {
    if (!verdict.limited) return;
    this.metrics?.failedAuthenticationRefused(credential);
    if (!this.logged.has(key)) {
      this.logged.set(key, true, { ttl: verdict.retryAfterSeconds * 1000 });
      this.logger.warn(
        `failed-authentication limit reached: address ${key.slice('ip:'.length)} used its ${this.limit} failed attempts per ` +
          `${this.windowSeconds} s (the last with an ${CREDENTIAL_NAMES[credential]}); its attempts are refused for ${verdict.retryAfterSeconds} s`,
      );
    }
    throw new AppError('RATE_LIMITED', failedAuthLimitMessage(this.limit, this.windowSeconds, verdict.retryAfterSeconds), {
      ...verdict.headers,
      'Retry-After': String(verdict.retryAfterSeconds),
    });
  }

  /** The storage being down must not turn every 401 into a 500: the attempt goes unlimited (and is logged once per outage by the client). */
  private async orNothing<T>(work: () => Promise<T>): Promise<T | undefined> {
    try {
      return await work();
    } catch (error) {
      this.logger.debug(`failed-authentication limit not applied: ${(error as Error).message}`);
      return undefined;
    }
  }
}

/** IPv6 addresses count per /64, as one client usually holds a whole /64. */
function addressKey(request: Request): string {
  return `ip:${normalizeIp(request.ip ?? request.socket.remoteAddress ?? 'unknown')}`;
}
