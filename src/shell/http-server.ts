import { ExpressAdapter } from '@nestjs/platform-express';
import type { NestApplicationOptions } from '@nestjs/common';
import http from 'node:http';
import type { AppConfig } from '../config/app-config';

/** How often Node looks for requests past their headers or request timeout (its default is 30 s). */
const TIMEOUT_CHECK_MS = 1000;

/**
 * Express under Nest, on an HTTP server with the deployment's timeouts and connection cap instead of
 * Node's defaults (300 s for a whole request, 60 s for headers, no cap): a client that sends its
 * headers or body slowly, or opens connections by the thousand, holds them for seconds, not minutes
 * (issue 24 #11). Past HTTP_MAX_CONNECTIONS Node closes a new connection at once.
 */
export class BoundedExpressAdapter extends ExpressAdapter {
  constructor(private readonly limits: AppConfig['http']) {
    super();
  }

  override initHttpServer(options: NestApplicationOptions): void {
    if (options?.httpsOptions || options?.forceCloseConnections) {
      super.initHttpServer(options);
    } else {
      const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs } = this.limits;
      this.httpServer = http.createServer(
        {
          // Node refuses a headers timeout longer than the request's.
          headersTimeout: Math.min(headersTimeoutMs, requestTimeoutMs),
          requestTimeout: requestTimeoutMs,
          keepAliveTimeout: keepAliveTimeoutMs,
          connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, Math.ceil(requestTimeoutMs / 2)),
        },
        this.getInstance(),
      );
    }
    const server = this.httpServer as http.Server;
    if (this.limits.maxConnections > 0) server.maxConnections = this.limits.maxConnections;
  }
}
