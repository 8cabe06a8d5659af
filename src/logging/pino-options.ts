import type { NextFunction, Request, Response } from 'express';
import pino, { Logger as PinoInstance, LoggerOptions } from 'pino';
import pinoPretty from 'pino-pretty';
import type { AppConfig, LogFormat } from '../config/app-config';
import { routeOf } from '../metrics/route-label';
import { maskFields, maskText, SECRET_HEADERS } from './redaction';

type LogLevel = AppConfig['logLevel'];

/** Every place a secret header could sit, should a request, response or header map ever be logged. */
const REDACTED_PATHS = SECRET_HEADERS.flatMap((header) =>
  ['req.headers', 'res.headers', 'headers', 'request.headers', 'response.headers'].map((parent) => `${parent}["${header}"]`),
);

/**
 * The one pino configuration: JSON lines on stdout, ISO timestamps, level names, secret headers
 * censored, every phone number in a message or a string field masked (`+4477009****`), our secrets
 * (`whsec_…`, `pf_live_…`, the admin and metrics tokens) redacted, and a failed query's bound values
 * and PostgreSQL's row detail never logged.
 */
export function pinoOptions(level: LogLevel): LoggerOptions {
  return {
    level,
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    formatters: {
      level: (label) => ({ level: label }),
      log: (fields) => maskFields(fields),
    },
    serializers: {
      err: (error: unknown) => {
        const serialized = pino.stdSerializers.err(error as Error) as unknown as Record<string, unknown>;
        // A driver error's data (detail, parameters) is dropped there: maskFields.
        return maskFields(serialized);
      },
    },
    hooks: {
      logMethod(args, method) {
        const masked = args.map((arg: unknown) => (typeof arg === 'string' ? maskText(arg) : arg));
        return method.apply(this, masked as Parameters<typeof method>);
      },
    },
  };
}

export function createRootLogger(level: LogLevel, format: LogFormat = 'json'): PinoInstance {
  return format === 'pretty' ? pino(pinoOptions(level), prettyStream()) : pino(pinoOptions(level));
}

/** Nest's start-up chatter (one line per module, route and mapping): JSON logs keep it, a terminal does not. */
const START_UP_CHATTER = /"context":"(InstanceLoader|RoutesResolver|RouterExplorer|NestFactory|NestApplication)"/;

/**
 * LOG_FORMAT=pretty: `12:00:01 INFO  [Context] message` lines, coloured on a terminal, written
 * synchronously (no worker thread, so nothing is lost on process.exit). Same masking: pino-pretty
 * only reformats the JSON line pino has already redacted.
 */
function prettyStream(): { write(line: string): void } {
  const pretty = pinoPretty({
    colorize: Boolean(process.stdout.isTTY),
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,context',
    messageFormat: '{if context}[{context}] {end}{msg}',
    sync: true,
  });
  return {
    write(line) {
      if (START_UP_CHATTER.test(line) && line.includes('"level":"info"')) return;
      pretty.write(line);
    },
  };
}

/**
 * The query parameters the API declares (its query DTOs; pino-options.spec.ts checks this list against
 * openapi.json). Only these names are logged: anything else a client puts in a query string, a key or
 * a token used as a name included, is logged as `(name)`.
 */
export const DECLARED_QUERY_PARAMETERS: ReadonlySet<string> = new Set([
  'limit',
  'cursor',
  'target_id',
  'since',
  // GET /admin/v1/accounts
  'name',
  'plan',
  'disabled',
  'balance_below',
  // a text/csv bulk upload's options
  'source',
  'callback_url',
  'max_age',
  'risk',
]);

/**
 * The query string with every value dropped (`limit=*&cursor=*`): which parameters came, never what
 * they said. A key, a token or a number sent in a URL stays out of the log whatever its place; a name
 * the API does not declare is `(name)`.
 */
export function queryShape(url: string): string | undefined {
  const at = url.indexOf('?');
  if (at < 0 || at === url.length - 1) return undefined;
  return url
    .slice(at + 1)
    .split('&')
    .filter((pair) => pair !== '')
    .map((pair) => {
      const name = pair.split('=', 1)[0];
      return `${DECLARED_QUERY_PARAMETERS.has(name) ? name : '(name)'}=*`;
    })
    .join('&');
}

/**
 * One line per request: who (request id, account), what (method, route pattern, the query's shape),
 * how (status, duration). Never the raw URL: its path and query can carry keys, tokens and numbers.
 */
function requestLine(request: Request, response: Response, durationMs: number, aborted: boolean): Record<string, unknown> {
  return {
    accountId: request.account?.accountId,
    method: request.method,
    route: routeOf(request),
    query: queryShape(request.originalUrl ?? request.url ?? ''),
    status: response.statusCode,
    durationMs,
    ...(aborted ? { aborted: true } : {}),
  };
}

/**
 * Express middleware: gives the request its logger (a child carrying the request id, which
 * nestjs-pino binds to the request's async context, so whatever is logged while serving it says
 * which request it was) and writes one line when the response is done: info, or warn for a 5xx or
 * an aborted response (the error itself is logged by the exception filter). Nothing of the request
 * or the response is serialized but these fields, so no header and no body can reach the log.
 *
 * Not pino-http: its per-request loggers serialize the whole request (headers and all, through the
 * redaction) whether or not a line is ever written, which was a third of /filter's CPU.
 */
export function requestLogging(root: PinoInstance): (req: Request, res: Response, next: NextFunction) => void {
  return (req, res, next) => {
    const started = performance.now();
    const log = root.child({ requestId: req.requestId });
    req.log = log;
    let logged = false;
    const done = () => {
      if (logged) return;
      logged = true;
      const aborted = !res.writableFinished;
      const level = aborted || res.statusCode >= 500 ? 'warn' : 'info';
      if (!log.isLevelEnabled(level)) return;
      const durationMs = Math.round((performance.now() - started) * 10) / 10;
      log[level](requestLine(req, res, durationMs, aborted), `${req.method} ${routeOf(req)} ${res.statusCode}`);
    };
    res.once('finish', done);
    res.once('close', done);
    next();
  };
}
