import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Request } from 'express';
import pino, { Logger as PinoInstance, LoggerOptions } from 'pino';
import type { Options as PinoHttpOptions } from 'pino-http';
import type { AppConfig } from '../config/app-config';
import { routeOf } from '../metrics/route-label';
import { maskPhonesIn, maskPhonesInFields, SECRET_HEADERS } from './redaction';

type LogLevel = AppConfig['logLevel'];

/** Every place a secret header could sit, should a request, response or header map ever be logged. */
const REDACTED_PATHS = SECRET_HEADERS.flatMap((header) =>
  ['req.headers', 'res.headers', 'headers', 'request.headers', 'response.headers'].map((parent) => `${parent}["${header}"]`),
);

/**
 * The one pino configuration: JSON lines on stdout, ISO timestamps, level names, secret headers
 * censored, and every phone number in a message or a string field masked (`+4477009****`).
 */
export function pinoOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    formatters: {
      level: (label) => ({ level: label }),
      log: (fields) => maskPhonesInFields(fields),
    },
    serializers: {
      err: (error: unknown) => {
        const serialized = pino.stdSerializers.err(error as Error) as unknown as Record<string, unknown>;
        return maskPhonesInFields(serialized);
      },
    },
    hooks: {
      logMethod(args, method) {
        const masked = args.map((arg: unknown) => (typeof arg === 'string' ? maskPhonesIn(arg) : arg));
        return method.apply(this, masked as Parameters<typeof method>);
      },
    },
  };
}

export function createRootLogger(level: LogLevel): PinoInstance {
  return pino(pinoOptions(level));
}

/** One line per request: who (request id, account), what (method, route, masked URL), how (status, duration). */
function requestLine(req: IncomingMessage, res: ServerResponse, durationMs: number): Record<string, unknown> {
  const request = req as Request;
  return {
    accountId: request.account?.accountId,
    method: request.method,
    route: routeOf(request),
    url: maskPhonesIn(request.originalUrl ?? request.url ?? ''),
    status: res.statusCode,
    durationMs,
    ...(res.writableFinished ? {} : { aborted: true }),
  };
}

/**
 * pino-http: the request id is the X-Request-Id the app already set (http-setup.ts); no request or
 * response object is ever serialized (so no header and no body can reach the log); 5xx lines are
 * warnings (the error itself is logged by the exception filter).
 */
export function pinoHttpOptions(logger: PinoInstance): PinoHttpOptions {
  return {
    logger,
    genReqId: (req) => (req as Request).requestId ?? randomUUID(),
    quietReqLogger: true,
    quietResLogger: true,
    customAttributeKeys: { reqId: 'requestId', responseTime: 'durationMs' },
    customLogLevel: (_req, res, error) => (error || res.statusCode >= 500 ? 'warn' : 'info'),
    customSuccessObject: (req, res, value: { durationMs: number }) => requestLine(req, res, value.durationMs),
    customErrorObject: (req, res, _error, value: { durationMs: number }) => requestLine(req, res, value.durationMs),
    customSuccessMessage: (req, res) => `${req.method} ${routeOf(req as Request)} ${res.statusCode}`,
    customErrorMessage: (req, res) => `${req.method} ${routeOf(req as Request)} ${res.statusCode}`,
  };
}
