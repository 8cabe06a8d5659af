import { CanActivate, ExecutionContext, Injectable, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AppError } from '../common/errors';
import { ApiKeysService } from './api-keys.service';
import { CUSTOMER_API } from './customer-api.decorator';

/** The secrets a caller can present: each is guessed at the same cost, so each is limited the same way. */
export type Credential = 'api_key' | 'admin_token';

/**
 * A limit on failed authentication attempts, per client address and kind of credential, so no
 * credential can be guessed at speed. Declared here, provided by the rate-limit module (auth stays a
 * leaf); without a provider, attempts are not limited.
 */
export abstract class AuthenticationAttempts {
  /** Counts one attempt, atomically; throws 429 RATE_LIMITED when it goes over the limit. */
  abstract count(request: Request, credential: Credential): Promise<void>;
  /** Returns an attempt counted in advance that turned out to be allowed. */
  abstract giveBack(request: Request, credential: Credential): Promise<void>;
}

/**
 * Runs `verify` (which throws a 401 AppError for a wrong credential) under the failed-authentication
 * limit. Every guard that checks a secret goes through here, so none can be guessed at speed.
 * - admin_token: a short, human-chosen secret. The attempt is counted BEFORE verifying (one atomic
 *   increment), so however many arrive at once, at most the limit are verified per window; once the
 *   limit is reached even the right token waits (it cannot be told from a guess without verifying
 *   it). A verified token gives its count back, so an administrator's own calls never use the limit.
 * - api_key: 190 random bits, not guessable whatever the rate. It is always verified and only a
 *   failure is counted (429 instead of 401 past the limit): a valid key is never refused here, as the
 *   contract limits only "requests without a valid key".
 */
export async function limitedAttempt<T>(
  attempts: AuthenticationAttempts | undefined,
  request: Request,
  credential: Credential,
  verify: () => T | Promise<T>,
): Promise<T> {
  const inAdvance = credential === 'admin_token';
  if (inAdvance) await attempts?.count(request, credential);
  let result: T;
  try {
    result = await verify();
  } catch (error) {
    const failed = error instanceof AppError && error.status === 401;
    if (failed && !inAdvance) await attempts?.count(request, credential);
    if (!failed && inAdvance) await attempts?.giveBack(request, credential);
    throw error;
  }
  if (inAdvance) await attempts?.giveBack(request, credential);
  return result;
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
    request.account = await limitedAttempt(this.attempts, request, 'api_key', () => this.keys.authenticate(request.header('authorization')));
    return true;
  }
}
