import type { Request } from 'express';

/** Label of requests no route matched (unknown paths): one series, whatever the URL, so no cardinality blow-up. */
export const UNMATCHED_ROUTE = '(unmatched)';

/**
 * Where the request-logging middleware is mounted (Nest mounts module middleware as an Express route,
 * so a request that matches nothing else keeps this as its `req.route`).
 */
export const LOGGING_MIDDLEWARE_PATH = '{*request}';
const MIDDLEWARE_ROUTE = `/${LOGGING_MIDDLEWARE_PATH}`;

/** The matched route's pattern, e.g. `/api/v1/filter/bulk/:id`, never the raw URL. */
export function routeOf(req: Request): string {
  const path: unknown = req.route?.path;
  if (typeof path !== 'string' || path === MIDDLEWARE_ROUTE) return UNMATCHED_ROUTE;
  return `${req.baseUrl}${path}`;
}
