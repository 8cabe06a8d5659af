import { INestApplication } from '@nestjs/common';
import type { CorsOptions } from '@nestjs/common/interfaces/external/cors-options.interface';
import { randomUUID } from 'node:crypto';
import express, { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import { deferredCsvParser, deferredJsonParser } from '../common/json-body';
import { AuthenticationAttempts } from '../auth/api-key.guard';
import { ApiKeysService } from '../auth/api-keys.service';
import { opsEndpointAccess } from './ops-access';
import { authenticatedBodyBudget } from './body-budget';
import { Clock } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { CorsOrigins } from '../config/http-options';
import { RequestLogging } from '../logging/logging.module';
import { Metrics } from '../metrics/metrics';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** X-Request-Id: the client's when it is sane, otherwise a new UUID; on every response. */
function requestId(req: Request, res: Response, next: NextFunction): void {
  const offered = req.header('x-request-id');
  req.requestId = offered && SANE_REQUEST_ID.test(offered) ? offered : randomUUID();
  res.setHeader('X-Request-Id', req.requestId);
  next();
}

/** Stamps the request's arrival by the Clock: a paid call's queue deadline counts from it (src/common/caller.ts). */
function arrival(clock: Clock): Middleware {
  return (req, _res, next) => {
    req.arrivedAt = clock.now();
    next();
  };
}

/**
 * helmet's defaults (CSP, HSTS, nosniff, frame-ancestors...) and `Cache-Control: no-store`, with two changes. Swagger UI at /docs
 * works under them: its scripts are same-origin files, its inline <style> is allowed by style-src.
 * `upgrade-insecure-requests` is dropped: on a plain-HTTP deployment (behind a TLS-terminating
 * proxy, or the compose demo) it would make browsers fetch Swagger UI's files over https and fail.
 */
function securityHeaders(): (req: Request, res: Response, next: NextFunction) => void {
  const middleware = helmet({
    contentSecurityPolicy: { directives: { 'upgrade-insecure-requests': null } },
  });
  // With this configuration helmet's headers are the same for every response: compute them once
  // instead of running its twelve middlewares on every request (they showed in the hot path's profile).
  const set = new Map<string, string>();
  const removed = new Set<string>();
  const recorder = {
    setHeader: (name: string, value: unknown) => set.set(name, String(value)),
    removeHeader: (name: string) => removed.add(name),
  };
  middleware({} as Request, recorder as unknown as Response, () => undefined);
  // Responses carry API keys, webhook secrets, balances: no browser or proxy cache may keep them.
  // Every response, so a route added later cannot forget it; Swagger UI's static files set their own.
  set.set('Cache-Control', 'no-store');
  const headers = [...set];
  return (_req, res, next) => {
    for (const [name, value] of headers) res.setHeader(name, value);
    for (const name of removed) res.removeHeader(name);
    next();
  };
}

/** Headers a browser client sends and may read; the API has no cookies, so never credentials. */
export function corsOptions(origins: CorsOrigins): CorsOptions {
  return {
    origin: origins === '*' ? '*' : origins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Cache-Control', 'Content-Type', 'Idempotency-Key', 'X-Request-Id'],
    exposedHeaders: ['X-Request-Id', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After'],
    credentials: false,
    maxAge: 600,
  };
}

type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/**
 * Several middlewares mounted as one: Express walks its layers one by one for every request
 * (matching, allocating), so the always-on ones share a layer. An error passed on (or thrown)
 * skips the rest, as between separate layers.
 */
export function inSequence(middlewares: Middleware[]): Middleware {
  return (req, res, next) => {
    let index = 0;
    const step = (error?: unknown): void => {
      if (error) return next(error);
      const middleware = middlewares[index++];
      if (middleware) middleware(req, res, step);
      else next();
    };
    step();
  };
}

/** Everything HTTP-level the app needs, shared by main.ts, the tests and the benchmark. */
export function configureHttp(app: INestApplication, config: AppConfig): void {
  const server = app.getHttpAdapter().getInstance() as express.Express;
  server.disable('x-powered-by');
  server.set('etag', false);
  // req.ip (the per-address rate limit) is the client's, not the load balancer's, only when told how many hops to trust.
  server.set('trust proxy', config.http.trustProxy);
  app.use(inSequence([arrival(app.get(Clock)), app.get(Metrics).httpMiddleware(), securityHeaders()]));
  if (config.http.corsOrigins) app.enableCors(corsOptions(config.http.corsOrigins));
  const fullBudget = inSequence([deferredJsonParser(), deferredCsvParser()]);
  const small = config.http.unauthenticatedBodyLimitBytes;
  const smallBudget = inSequence([deferredJsonParser(small), deferredCsvParser(small)]);
  const bodies = authenticatedBodyBudget(app.get(ApiKeysService), config.adminToken, fullBudget, smallBudget);
  // OPS_ENDPOINTS=private only: public ops endpoints need no step on every request.
  const opsAccess = config.opsEndpoints.private ? [opsEndpointAccess(config, app.get(AuthenticationAttempts, { strict: false }))] : [];
  app.use(inSequence([requestId, app.get(RequestLogging).middleware, ...opsAccess, bodies]));
  // No app.enableShutdownHooks(): main.ts owns SIGTERM/SIGINT/SIGHUP (drain HTTP first, then app.close()).
}
