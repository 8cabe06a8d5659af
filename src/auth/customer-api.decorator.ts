import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth } from '@nestjs/swagger';
import type { Request } from 'express';
import { AuthenticatedAccount } from './authenticated-account';

export const CUSTOMER_API = 'phone-filter:customer-api';

/** Marks a controller as part of /api/v1: the API key guard (and the plan limits) apply. */
export function CustomerApi(): ClassDecorator & MethodDecorator {
  return applyDecorators(SetMetadata(CUSTOMER_API, true), ApiBearerAuth('api-key'));
}

/** The calling account, as authenticated by the API key guard. */
export const CurrentAccount = createParamDecorator((_: unknown, context: ExecutionContext): AuthenticatedAccount =>
  authenticatedAccount(context.switchToHttp().getRequest<Request>()),
);

/** The account the API key guard authenticated for this request (a route marked @CustomerApi()). */
export function authenticatedAccount(request: Request): AuthenticatedAccount {
  const account = request.account;
  if (!account) throw new Error('CurrentAccount used on a route without @CustomerApi()');
  return account;
}
