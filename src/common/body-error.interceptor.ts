import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request } from 'express';
import { Observable } from 'rxjs';
import { AppError } from './errors';
import { takeDeferredBodyError } from './http-setup';

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** Raises body problems (bad JSON, too large, wrong content type) once authentication has passed. */
@Injectable()
export class BodyErrorInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const request = context.switchToHttp().getRequest<Request>();
    const bodyError = takeDeferredBodyError(request);
    if (bodyError) throw bodyError;
    if (METHODS_WITH_BODY.has(request.method) && hasBody(request) && !request.is(['application/json', 'application/*+json'])) {
      throw new AppError('INVALID_REQUEST', 'Content-Type must be application/json.');
    }
    return next.handle();
  }
}

function hasBody(request: Request): boolean {
  return request.headers['transfer-encoding'] !== undefined || Number(request.headers['content-length'] ?? 0) > 0;
}
