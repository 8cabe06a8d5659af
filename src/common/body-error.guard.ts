import { CanActivate, ExecutionContext, Injectable, SetMetadata } from '@nestjs/common';
import { GUARDS_METADATA } from '@nestjs/common/constants';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AppError } from './errors';
import { takeDeferredBodyError } from './json-body';

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);
const ACCEPTS_CSV = 'phone-filter:accepts-csv';

/** A route that also takes a `text/csv` body (a string in req.body; the route parses it). */
export const AcceptsCsv = (): MethodDecorator => SetMetadata(ACCEPTS_CSV, true);

/**
 * Raises a body problem (bad JSON, too large, too deep, wrong content type) kept by the body parser,
 * or does nothing. Called once authentication and the rate limit have passed, so that the contract's
 * order holds: 401, then 429, then 400.
 */
export function raiseBodyError(request: Request, acceptsCsv = false): void {
  const bodyError = takeDeferredBodyError(request);
  if (bodyError) throw bodyError;
  const types = acceptsCsv ? ['application/json', 'application/*+json', 'text/csv'] : ['application/json', 'application/*+json'];
  if (METHODS_WITH_BODY.has(request.method) && hasBody(request) && !request.is(types)) {
    throw new AppError('INVALID_REQUEST', acceptsCsv ? 'Content-Type must be application/json or text/csv.' : 'Content-Type must be application/json.');
  }
}

/** Whether the request says it carries a body (a length above 0, or chunks). */
export function hasBody(request: Request): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}

/**
 * The last global guard: raises body problems after authentication and the plan limit. A guard, not
 * an interceptor, because one global interceptor puts every request of the API through an RxJS
 * pipeline (a tenth of the hot path's CPU in the profile). Global guards run before a route's own
 * guards, so a route that has guards of its own (the admin API) is left to them: the last of them
 * calls `raiseBodyError` itself.
 */
@Injectable()
export class BodyErrorGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const ownGuards = this.reflector.getAllAndMerge<unknown[]>(GUARDS_METADATA, [context.getHandler(), context.getClass()]);
    if (ownGuards.length === 0) {
      const acceptsCsv = this.reflector.get<boolean | undefined>(ACCEPTS_CSV, context.getHandler()) === true;
      raiseBodyError(context.switchToHttp().getRequest<Request>(), acceptsCsv);
    }
    return true;
  }
}
