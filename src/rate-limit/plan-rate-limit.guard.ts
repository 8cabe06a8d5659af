import { CanActivate, ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { CUSTOMER_API } from '../auth/customer-api.decorator';
import { AppError } from '../common/errors';
import { COUNT_ONLY, judge, planLimitMessage } from './rate-limit-policy';
import { RateLimitStorage, StorageRecord } from './rate-limit-storage';

const THROTTLER_NAME = 'plan';

/**
 * The plan limit of /api/v1: per account (all its keys and routes together), `plan.limit` requests per
 * `plan.windowSeconds`, read from the authenticated account on every request, so a plan change applies
 * as soon as the key cache refreshes (1 s). Registered after ApiKeyGuard: 401 comes before 429, and a
 * refused request never reaches validation, the handler or the ledger.
 *
 * One storage call per request (one EVALSHA with Redis), and nothing of @nestjs/throttler's generic
 * guard (per-throttler metadata lookups, resolvers), which showed in the hot path's profile.
 */
@Injectable()
export class PlanRateLimitGuard implements CanActivate {
  private readonly logger = new Logger(PlanRateLimitGuard.name);

  constructor(
    private readonly reflector: Reflector,
    private readonly storage: RateLimitStorage,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const account = context.switchToHttp().getRequest<Request>().account;
    if (!account || !this.reflector.getAllAndOverride<boolean>(CUSTOMER_API, [context.getHandler(), context.getClass()])) return true;
    const { limit, windowSeconds } = account.plan;
    const windowMs = windowSeconds * 1000;
    let record: StorageRecord;
    try {
      record = await this.storage.increment(`account:${account.accountId}`, windowMs, COUNT_ONLY, windowMs, THROTTLER_NAME);
    } catch (error) {
      // An outage of the shared store must not take the API down with it; the Redis client logs it once.
      this.logger.debug(`plan limit not applied: ${(error as Error).message}`);
      return true;
    }
    const verdict = judge(limit, { hits: record.totalHits, secondsToReset: record.timeToExpire });
    const response = context.switchToHttp().getResponse<Response>();
    for (const header in verdict.headers) response.setHeader(header, verdict.headers[header]);
    if (verdict.limited) {
      throw new AppError('RATE_LIMITED', planLimitMessage(account.plan, verdict.retryAfterSeconds), {
        ...verdict.headers,
        'Retry-After': String(verdict.retryAfterSeconds),
      });
    }
    return true;
  }
}

