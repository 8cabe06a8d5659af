import { CanActivate, ExecutionContext, createParamDecorator, Injectable, Optional } from '@nestjs/common';
import type { Request } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { AuthenticationAttempts, limitedAttempt } from '../auth/api-key.guard';
import { bearerToken, looksLikeApiKey } from '../auth/api-key-format';
import { raiseBodyError } from '../common/body-error.guard';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { AdminActor } from './admin.service';

/**
 * Guards /admin/v1: `Authorization: Bearer <ADMIN_TOKEN>`, compared in constant time over SHA-256
 * digests (equal lengths, so neither the token nor its length leaks), under the
 * failed-authentication limit per address (its own count, reserved before verifying: see limitedAttempt). Without ADMIN_TOKEN
 * the admin API does not exist: every route answers 404 like an unknown one.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expectedDigest: Buffer | undefined;

  constructor(
    config: AppConfig,
    @Optional() private readonly attempts?: AuthenticationAttempts,
  ) {
    this.expectedDigest = config.adminToken === undefined ? undefined : digest(config.adminToken);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const expected = this.expectedDigest;
    if (!expected) throw new AppError('NOT_FOUND', `No route ${request.method} ${request.path}.`);
    await limitedAttempt(this.attempts, request, 'admin_token', () => verifyAdminToken(request, expected));
    // The global BodyErrorGuard leaves routes with guards of their own to them: body problems come after the 401.
    raiseBodyError(request);
    return true;
  }
}

function verifyAdminToken(request: Request, expected: Buffer): void {
  const token = bearerToken(request.header('authorization'));
  if (!token) {
    throw new AppError('INVALID_API_KEY', 'The admin API needs the header "Authorization: Bearer <ADMIN_TOKEN>".');
  }
  if (!timingSafeEqual(digest(token), expected)) {
    throw new AppError(
      'INVALID_API_KEY',
      looksLikeApiKey(token) ? 'A customer API key cannot open the admin API; send the ADMIN_TOKEN.' : 'Wrong admin token.',
    );
  }
}

/** Whether a bearer token is this deployment's ADMIN_TOKEN (constant time); always false without one. */
export function adminTokenMatcher(adminToken: string | undefined): (token: string | undefined) => boolean {
  const expected = adminToken === undefined ? undefined : digest(adminToken);
  return (token) => expected !== undefined && token !== undefined && timingSafeEqual(digest(token), expected);
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** The actor of an admin HTTP call, for the audit trail and the ledger. */
export const HttpAdminActor = createParamDecorator(
  (_: unknown, context: ExecutionContext): AdminActor => ({
    name: 'admin-api',
    requestId: context.switchToHttp().getRequest<Request>().requestId,
  }),
);
