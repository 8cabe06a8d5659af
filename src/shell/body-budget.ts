import type { NextFunction, Request, Response } from 'express';
import { adminTokenMatcher } from '../admin/admin-token.guard';
import { bearerToken, looksLikeApiKey } from '../auth/api-key-format';
import { ApiKeysService } from '../auth/api-keys.service';
import { hasBody } from '../common/body-error.guard';

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/**
 * Authentication before any body is read: a request whose `Authorization` carries no valid API key and
 * not the ADMIN_TOKEN has its body read through `small` (UNAUTHENTICATED_BODY_LIMIT_BYTES of inflated
 * bytes), every other one through `full` (1 MiB). Its answer is the guard's 401 (or the failed-auth
 * limit's 429) either way; the budget only stops a 1 KB gzip body from costing the CPU of inflating
 * 1 MiB first (issue 24 #4). A key is verified once: the guard awaits the verification started here.
 */
export function authenticatedBodyBudget(keys: ApiKeysService, adminToken: string | undefined, full: Middleware, small: Middleware): Middleware {
  const isAdminToken = adminTokenMatcher(adminToken);
  return (req, res, next) => {
    if (!hasBody(req)) return next();
    const authorization = req.header('authorization');
    const token = bearerToken(authorization);
    const notAKey = () => (isAdminToken(token) ? full : small)(req, res, next);
    if (token === undefined || !looksLikeApiKey(token)) return notAKey();
    const verification = keys.authenticate(authorization);
    req.keyVerification = verification;
    verification.then(
      () => full(req, res, next),
      // Refused or not verifiable now (the database): the guard answers it from the same promise.
      notAKey,
    );
  };
}
