import { Injectable, Logger } from '@nestjs/common';
import { normalizeIp } from '@nestjs/throttler';
import type { Request } from 'express';
import { AuthenticationAttempts } from '../auth/api-key.guard';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { COUNT_ONLY, failedAuthLimitMessage, judge, Verdict } from './rate-limit-policy';
import { RateLimitStorage } from './rate-limit-storage';

const THROTTLER_NAME = 'failed-auth';

/**
 * IP_RATE_LIMIT failed authentications per IP_RATE_WINDOW_SECONDS per client address. Past it, the
 * address gets 429 before its key is looked at, so a guess can be neither checked nor confirmed; a valid
 * key used from that same address waits too (we cannot tell it from a guess without checking it).
 * Successful calls are not counted, and other addresses are never affected.
 */
@Injectable()
export class FailedAuthLimiter extends AuthenticationAttempts {
  private readonly logger = new Logger(FailedAuthLimiter.name);
  private readonly limit: number;
  private readonly windowSeconds: number;

  constructor(
    private readonly storage: RateLimitStorage,
    config: AppConfig,
  ) {
    super();
    ({ limit: this.limit, windowSeconds: this.windowSeconds } = config.ipRateLimit);
  }

  async beforeAttempt(request: Request): Promise<void> {
    const window = await this.orNothing(() => this.storage.peek(addressKey(request), THROTTLER_NAME));
    // The next failure would go over: refuse the attempt as if it had been made.
    if (window) this.refuseIfLimited(judge(this.limit, { ...window, hits: window.hits + 1 }));
  }

  async afterFailure(request: Request): Promise<void> {
    const windowMs = this.windowSeconds * 1000;
    const record = await this.orNothing(() => this.storage.increment(addressKey(request), windowMs, COUNT_ONLY, windowMs, THROTTLER_NAME));
    if (record) this.refuseIfLimited(judge(this.limit, { hits: record.totalHits, secondsToReset: record.timeToExpire }));
  }

  private refuseIfLimited(verdict: Verdict): void {
    if (!verdict.limited) return;
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
