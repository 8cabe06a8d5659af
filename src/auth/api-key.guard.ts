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
  /**
   * Counts one failed attempt, atomically; throws 429 RATE_LIMITED when it goes over the limit. Resolves
   * with the `RateLimit-*` headers of the address's window, which a 401 carries so a client sees its budget.
   */
  abstract count(request: Request, credential: Credential): Promise<Record<string, string>>;
}

/**
 * Runs `verify` (which throws a 401 AppError for a wrong credential) under the failed-authentication
 * limit. Every guard that checks a secret goes through here. Every attempt is verified and only a
 * failure is counted: past the limit a wrong credential gets 429 instead of 401, and a right one is
 * served whatever the count of its address, so nobody can lock the administrator (or a customer) out
 * by sending wrong ones, even from the same address (every client behind a proxy without
 * TRUST_PROXY). The limit slows guessing down; what makes guessing hopeless is the secret's length:
 * an API key has 190 random bits, and ADMIN_TOKEN must be long and random (docs/operations.md).
 */
export async function limitedAttempt<T>(
  attempts: AuthenticationAttempts | undefined,
  request: Request,
  credential: Credential,
  verify: () => T | Promise<T>,
): Promise<T> {
  try {
    return await verify();
  } catch (error) {
    if (!(error instanceof AppError && error.status === 401)) throw error;
    const window = await attempts?.count(request, credential);
    throw window ? new AppError(error.code, error.message, { ...error.headers, ...window }) : error;
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
    request.account = await limitedAttempt(
      this.attempts,
      request,
      'api_key',
      () => request.keyVerification ?? this.keys.authenticate(request.header('authorization')),
    );
    return true;
  }
}
