import { CanActivate, ExecutionContext, Injectable, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AppError } from '../common/errors';
import { ApiKeysService } from './api-keys.service';
import { CUSTOMER_API } from './customer-api.decorator';

/** The secrets a caller can present: each is guessed at the same cost, so each is limited the same way. */
export type Credential = 'api_key' | 'admin_token';

/**
 * A limit on authentication attempts, so no credential (customer key or admin token) can be guessed at
 * speed. Declared here, provided by the rate-limit module (auth stays a leaf); without a provider,
 * attempts are not limited.
 */
export abstract class AuthenticationAttempts {
  /** Throws 429 RATE_LIMITED, before the credential is even looked at, when this caller may not try now. */
  abstract beforeAttempt(request: Request, credential: Credential): Promise<void>;
  /** Counts a failed attempt; throws 429 RATE_LIMITED instead of the 401 when it goes over the limit. */
  abstract afterFailure(request: Request, credential: Credential): Promise<void>;
}

/**
 * Runs `verify` (which throws a 401 AppError for a wrong credential) under the failed-authentication
 * limit: refused before verifying while the address is limited, counted when it fails. Every guard
 * that checks a secret goes through here, so none can be guessed at speed.
 */
export async function limitedAttempt<T>(
  attempts: AuthenticationAttempts | undefined,
  request: Request,
  credential: Credential,
  verify: () => T | Promise<T>,
): Promise<T> {
  await attempts?.beforeAttempt(request, credential);
  try {
    return await verify();
  } catch (error) {
    if (error instanceof AppError && error.status === 401) await attempts?.afterFailure(request, credential);
    throw error;
  }
}

/** Global guard: every route marked @CustomerApi() needs `Authorization: Bearer <API_KEY>`. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly keys: ApiKeysService,
    @Optional() private readonly attempts?: AuthenticationAttempts,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const isCustomerApi = this.reflector.getAllAndOverride<boolean>(CUSTOMER_API, [context.getHandler(), context.getClass()]);
    if (!isCustomerApi) return true;
    const request = context.switchToHttp().getRequest<Request>();
    const authorization = request.header('authorization');
    const known = this.attempts && this.keys.knownAccount(authorization);
    if (known) {
      // An active key this instance verified within the last second: taking it costs no query and tells
      // the caller nothing yet, so the address's check runs alongside the plan count (one round trip to
      // Redis instead of two). PlanRateLimitGuard awaits it before its own verdict: a limited address is
      // refused with the same 429, whatever key it sends. Any other key waits for the check, as before.
      request.account = known;
      request.pendingAttemptCheck = this.attempts!.beforeAttempt(request, 'api_key');
      // Awaited by PlanRateLimitGuard; this only keeps a refusal from being reported as unhandled meanwhile.
      request.pendingAttemptCheck.catch(() => undefined);
      return true;
    }
    request.account = await limitedAttempt(this.attempts, request, 'api_key', () => this.keys.authenticate(authorization));
    return true;
  }
}
