import type { NextFunction, Request, Response } from 'express';
import { adminTokenMatcher } from '../admin/admin-token.guard';
import { AuthenticationAttempts, limitedAttempt } from '../auth/api-key.guard';
import { bearerToken } from '../auth/api-key-format';
import { AppError, errorBody } from '../common/errors';
import type { AppConfig } from '../config/app-config';

const DOCS = /^\/docs(-json|-yaml)?(\/|$)/;

/**
 * Mounted with OPS_ENDPOINTS=private (the default with NODE_ENV=production): /docs and /docs-json (the whole admin
 * API) need `Authorization: Bearer <ADMIN_TOKEN>`, /metrics (credit totals) the ADMIN_TOKEN or
 * METRICS_TOKEN (what a Prometheus scrape config sends: `authorization: { credentials_file: … }`), and
 * /health/ready shows which dependency is down only to them; its bare status (200 / 503) stays public
 * for load balancers, as /health/live does. Wrong tokens count against the failed-authentication limit.
 */
export function opsEndpointAccess(config: AppConfig, attempts: AuthenticationAttempts | undefined): (req: Request, res: Response, next: NextFunction) => void {
  const isAdminToken = adminTokenMatcher(config.adminToken);
  const isMetricsToken = adminTokenMatcher(config.opsEndpoints.metricsToken);
  return (req, res, next) => {
    const path = req.path;
    const metrics = path === '/metrics';
    if (path === '/health/ready') {
      const token = bearerToken(req.header('authorization'));
      req.opsDetail = isAdminToken(token) || isMetricsToken(token);
      return next();
    }
    if (!metrics && !DOCS.test(path)) return next();
    const wanted = metrics ? 'METRICS_TOKEN or ADMIN_TOKEN' : 'ADMIN_TOKEN';
    limitedAttempt(attempts, req, 'admin_token', () => {
      const token = bearerToken(req.header('authorization'));
      if (!(isAdminToken(token) || (metrics && isMetricsToken(token)))) {
        throw new AppError('INVALID_API_KEY', `${path} is private on this deployment: send "Authorization: Bearer <${wanted}>" (OPS_ENDPOINTS).`);
      }
    }).then(
      () => next(),
      (error: unknown) => {
        const refusal = error instanceof AppError ? error : new AppError('INTERNAL_ERROR');
        for (const [name, value] of Object.entries(refusal.headers)) res.setHeader(name, value);
        res.status(refusal.status).type('application/json; charset=utf-8').send(JSON.stringify(errorBody(refusal.code, refusal.message)));
      },
    );
  };
}
