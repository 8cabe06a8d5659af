import { ExecutionContext, Injectable, Logger } from '@nestjs/common';
import { ThrottlerGuard, ThrottlerModuleOptions, ThrottlerRequest } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CUSTOMER_API } from '../auth/customer-api.decorator';
import { AppError } from '../common/errors';
import { COUNT_ONLY, judge, planLimitMessage } from './rate-limit-policy';
import { RateLimitStorage } from './rate-limit-storage';

const THROTTLER_NAME = 'plan';

/**
 * The plan limit of /api/v1: per account (all its keys and routes together), `plan.limit` requests per
 * `plan.windowSeconds`, read from the authenticated account on every request, so a plan change applies
 * as soon as the key cache refreshes (1 s). Registered after ApiKeyGuard: 401 comes before 429, and a
 * refused request never reaches validation, the handler or the ledger.
 */
@Injectable()
export class PlanRateLimitGuard extends ThrottlerGuard {
  private readonly storeLogger = new Logger(PlanRateLimitGuard.name);

  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    const isCustomerApi = this.reflector.getAllAndOverride<boolean>(CUSTOMER_API, [context.getHandler(), context.getClass()]);
    return !isCustomerApi || !context.switchToHttp().getRequest<Request>().account;
  }

  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    return `account:${(req as unknown as Request).account!.accountId}`;
  }

  /** One window per account, whichever route is called (the default key is per route). */
  protected override generateKey(_context: ExecutionContext, tracker: string): string {
    return tracker;
  }

  protected override async handleRequest({ context, limit, ttl, throttler, getTracker, generateKey }: ThrottlerRequest): Promise<boolean> {
    const { req, res } = this.getRequestResponse(context) as { req: Request; res: Response };
    const name = throttler.name ?? THROTTLER_NAME;
    const key = generateKey(context, await getTracker(req, context), name);
    let record;
    try {
      record = await this.storageService.increment(key, ttl, COUNT_ONLY, ttl, name);
    } catch (error) {
      // An outage of the shared store must not take the API down with it; the Redis client logs it once.
      this.storeLogger.debug(`plan limit not applied: ${(error as Error).message}`);
      return true;
    }
    const verdict = judge(limit, { hits: record.totalHits, secondsToReset: record.timeToExpire });
    for (const [header, value] of Object.entries(verdict.headers)) res.setHeader(header, value);
    if (verdict.limited) {
      throw new AppError('RATE_LIMITED', planLimitMessage(callerPlan(context), verdict.retryAfterSeconds), {
        ...verdict.headers,
        'Retry-After': String(verdict.retryAfterSeconds),
      });
    }
    return true;
  }
}

function callerPlan(context: ExecutionContext): AuthenticatedAccount['plan'] {
  return context.switchToHttp().getRequest<Request>().account!.plan;
}

/** The throttler options behind PlanRateLimitGuard: one throttler whose limit and window are the caller's plan. */
export function planThrottlerOptions(storage: RateLimitStorage): ThrottlerModuleOptions {
  return {
    storage,
    setHeaders: false,
    throttlers: [
      {
        name: THROTTLER_NAME,
        limit: (context) => callerPlan(context).limit,
        ttl: (context) => callerPlan(context).windowSeconds * 1000,
      },
    ],
  };
}
