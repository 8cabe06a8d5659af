import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { QueryRunnerAlreadyReleasedError, QueryRunnerProviderAlreadyReleasedError, TransactionNotStartedError } from 'typeorm';
import { CallerNotServed } from './caller';
import { AppError, ErrorCode, errorBody } from './errors';
import { bodyParserAnswer, BodyParserError } from './json-body';

const STATUS_TO_CODE: Partial<Record<number, ErrorCode>> = {
  [HttpStatus.BAD_REQUEST]: 'INVALID_REQUEST',
  [HttpStatus.UNAUTHORIZED]: 'INVALID_API_KEY',
  [HttpStatus.PAYMENT_REQUIRED]: 'INSUFFICIENT_CREDITS',
  [HttpStatus.NOT_FOUND]: 'NOT_FOUND',
  [HttpStatus.METHOD_NOT_ALLOWED]: 'NOT_FOUND',
  [HttpStatus.CONFLICT]: 'IDEMPOTENCY_CONFLICT',
  [HttpStatus.PAYLOAD_TOO_LARGE]: 'PAYLOAD_TOO_LARGE',
  [HttpStatus.UNSUPPORTED_MEDIA_TYPE]: 'INVALID_REQUEST',
  [HttpStatus.TOO_MANY_REQUESTS]: 'RATE_LIMITED',
  [HttpStatus.SERVICE_UNAVAILABLE]: 'SERVICE_UNAVAILABLE',
};

/**
 * Postgres SQLSTATE classes and driver errors that mean "our database is unreachable", or cannot run
 * the request path's statements for now: 42P05/26000, named prepared statements behind a pooler in
 * transaction mode (DATABASE_PREPARED_STATEMENTS=named there; the connection is dropped, see preparedQuery);
 * 40P01/40001, a transaction PostgreSQL rolled back to break a deadlock or a serialization conflict (the
 * charge statement runs again itself; anywhere else the client's retry does).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  try {
    return databaseUnavailable(error);
  } catch {
    return false; // an error whose properties throw when read (a getter, a Proxy) is not one of these
  }
}

function databaseUnavailable(error: unknown): boolean {
  // TypeORM's words for a transaction whose connection the pool already dropped (PostgreSQL killed under it):
  // its next statement, or its ROLLBACK after a failed BEGIN/COMMIT.
  if (error instanceof QueryRunnerProviderAlreadyReleasedError || error instanceof QueryRunnerAlreadyReleasedError || error instanceof TransactionNotStartedError) return true;
  // The error, the driver's error TypeORM wrapped, and what either was caused by (pg-pool's connect timeout wraps the socket's).
  const candidates: unknown[] = [];
  for (let next: unknown = error; next && typeof next === 'object' && candidates.length < 8 && !candidates.includes(next); ) {
    candidates.push(next);
    const { driverError, cause } = next as { driverError?: unknown; cause?: unknown };
    if (driverError && typeof driverError === 'object') candidates.push(driverError);
    next = cause ?? (driverError as { cause?: unknown } | undefined)?.cause;
  }
  return candidates.some((candidate) => {
    if (!candidate || typeof candidate !== 'object') return false;
    const { code, message } = candidate as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (/^(08|57P0|53300|42P05|26000|40P01|40001)/.test(code) || ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE'].includes(code))) {
      return true;
    }
    return typeof message === 'string' && /Connection terminated|connection timeout|timeout exceeded when trying to connect|timeout expired|Query read timeout|Client has encountered a connection error|Client was closed and is not queryable|Driver not Connected|the database system is (shutting down|starting up)/i.test(message);
  });
}

/**
 * The one exception filter: every error anywhere in the app leaves as
 * `{ "error": { "code", "message" } }` with the contract's status. Nothing internal
 * (stack, SQL, driver text) ever reaches the client.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const request = http.getRequest<Request>();
    const response = http.getResponse<Response>();
    const { code, message, headers } = this.describe(exception, request);
    const status = new AppError(code).status;

    if (exception instanceof CallerNotServed) {
      const refunded = exception.refunded ? ' (charged, then refunded at its settle)' : '';
      this.logger.warn({ msg: `request ${request?.requestId ?? '-'} not charged: ${exception.reason}${refunded}`, requestId: request?.requestId, reason: exception.reason });
    } else if (code === 'INTERNAL_ERROR' || code === 'SERVICE_UNAVAILABLE') {
      // One structured line (the request id also binds it to the request's access line); pino masks phone numbers in it.
      this.logger.error({
        msg: `request ${request?.requestId ?? '-'} ${request?.method} ${request?.route?.path ?? '(no route)'} failed: ${describeForLog(exception)}`,
        requestId: request?.requestId,
        code,
        err: exception instanceof Error ? exception : undefined,
      });
    }
    if (response.headersSent) {
      response.end();
      return;
    }
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    response.status(status).type('application/json; charset=utf-8').send(JSON.stringify(errorBody(code, message)));
  }

  private describe(exception: unknown, request: Request): { code: ErrorCode; message?: string; headers: Record<string, string> } {
    if (exception instanceof AppError) {
      return { code: exception.code, message: exception.message, headers: exception.headers };
    }
    if (exception instanceof ThrottlerException) {
      return { code: 'RATE_LIMITED', headers: {} };
    }
    if (exception instanceof BodyParserError) {
      return { ...bodyParserAnswer(exception), headers: {} };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const code = STATUS_TO_CODE[status] ?? (status >= 500 ? 'INTERNAL_ERROR' : 'INVALID_REQUEST');
      if (code === 'NOT_FOUND' && request) {
        return { code, message: `No route ${request.method} ${request.path}.`, headers: {} };
      }
      return { code, headers: {} };
    }
    if (isDatabaseUnavailable(exception)) {
      return { code: 'SERVICE_UNAVAILABLE', headers: {} };
    }
    return { code: 'INTERNAL_ERROR', headers: {} };
  }
}

function describeForLog(exception: unknown): string {
  if (exception instanceof Error) return `${exception.name}: ${exception.message}`;
  return String(exception);
}
