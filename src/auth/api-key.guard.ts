import { CanActivate, ExecutionContext, Injectable, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AppError } from '../common/errors';
import { ApiKeysService } from './api-keys.service';
import { CUSTOMER_API } from './customer-api.decorator';

/**
 * A limit on authentication attempts, so keys cannot be guessed at speed. Declared here, provided by
 * the rate-limit module (auth stays a leaf); without a provider, attempts are not limited.
 */
export abstract class AuthenticationAttempts {
  /** Throws 429 RATE_LIMITED, before the key is even looked at, when this caller may not try now. */
  abstract beforeAttempt(request: Request): Promise<void>;
  /** Counts a failed attempt; throws 429 RATE_LIMITED instead of the 401 when it goes over the limit. */
  abstract afterFailure(request: Request): Promise<void>;
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
    await this.attempts?.beforeAttempt(request);
    try {
      request.account = await this.keys.authenticate(request.header('authorization'));
    } catch (error) {
      if (error instanceof AppError && error.status === 401) await this.attempts?.afterFailure(request);
      throw error;
    }
    return true;
  }
}
