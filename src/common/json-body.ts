import express, { NextFunction, Request, Response } from 'express';
import { AppError } from './errors';

export const BODY_LIMIT_BYTES = 1024 * 1024;
/** Deeper bodies are refused before validation, whose recursive walk would overflow the stack. */
export const BODY_MAX_DEPTH = 32;
const deferredBodyErrors = new WeakMap<Request, unknown>();

/**
 * JSON bodies up to 1 MiB. A parse error is not answered here: it is kept and raised after the
 * guards (BodyErrorGuard), so the contract's order holds: 401 and 429 come before 400.
 */
export function deferredJsonParser(): (req: Request, res: Response, next: NextFunction) => void {
  const parse = express.json({ limit: BODY_LIMIT_BYTES, strict: true, type: ['application/json', 'application/*+json'] });
  return (req, res, next) =>
    parse(req, res, (error?: unknown) => {
      if (error) deferredBodyErrors.set(req, error);
      else if (depthExceeds(req.body, BODY_MAX_DEPTH)) {
        deferredBodyErrors.set(req, new AppError('INVALID_REQUEST', `The request body is nested deeper than ${BODY_MAX_DEPTH} levels.`));
      }
      next();
    });
}

/**
 * text/csv bodies (bulk uploads) up to 1 MiB, as a string in req.body; errors deferred like JSON's.
 * Other routes refuse a string body in validation (it is not a JSON object).
 */
export function deferredCsvParser(): (req: Request, res: Response, next: NextFunction) => void {
  const parse = express.text({ limit: BODY_LIMIT_BYTES, type: 'text/csv', defaultCharset: 'utf-8' });
  return (req, res, next) =>
    parse(req, res, (error?: unknown) => {
      if (error) deferredBodyErrors.set(req, error);
      next();
    });
}

/** Iterative, so that measuring a hostile body cannot itself overflow the stack. */
export function depthExceeds(value: unknown, maxDepth: number): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= maxDepth) return true;
    for (const child of Object.values(node)) stack.push([child, depth + 1]);
  }
  return false;
}

export function takeDeferredBodyError(req: Request): unknown {
  return deferredBodyErrors.get(req);
}

