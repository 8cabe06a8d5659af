import express, { NextFunction, Request, Response } from 'express';
import { AppError, ErrorCode } from './errors';
import { colonCount, duplicateKey } from './json-duplicate-keys';

export const BODY_LIMIT_BYTES = 1024 * 1024;
/** Deeper bodies are refused before validation, whose recursive walk would overflow the stack. */
export const BODY_MAX_DEPTH = 32;
const deferredBodyErrors = new WeakMap<Request, unknown>();

/**
 * JSON bodies up to `limit` bytes once decoded (1 MiB; less for a request without a valid credential:
 * src/shell/body-budget.ts). A parse error is not answered here: it is kept and raised after the
 * guards (BodyErrorGuard), so the contract's order holds: 401 and 429 come before 400.
 */
export function deferredJsonParser(limit = BODY_LIMIT_BYTES): (req: Request, res: Response, next: NextFunction) => void {
  const types = ['application/json', 'application/*+json'];
  const raws = new WeakMap<Request, Buffer>();
  const parse = express.json({ limit, strict: true, type: types, verify: (req, _res, raw) => void raws.set(req as Request, raw) });
  return (req, res, next) => {
    const charsetError = notUtf8(req, types);
    if (charsetError) {
      deferredBodyErrors.set(req, charsetError);
      return next();
    }
    parse(req, res, (error?: unknown) => {
      if (error) {
        deferredBodyErrors.set(req, new BodyParserError(error));
        return next();
      }
      const shape = bodyShape(req.body, BODY_MAX_DEPTH);
      if (shape.tooDeep) {
        deferredBodyErrors.set(req, new AppError('INVALID_REQUEST', `The request body is nested deeper than ${BODY_MAX_DEPTH} levels.`));
        return next();
      }
      // As many colons as keys: no key is there twice (src/common/json-duplicate-keys.ts); otherwise a scan says.
      const raw = raws.get(req);
      if (raw !== undefined && colonCount(raw) > shape.keys) {
        const twice = duplicateKey(raw.toString('utf8'));
        if (twice !== null) deferredBodyErrors.set(req, new AppError('INVALID_REQUEST', `The request body has the key "${twice}" twice; send each field once.`));
      }
      next();
    });
  };
}

/**
 * UTF-8 only (RFC 8259 §8.1): a JSON or CSV body declaring another charset (utf-16, latin1, ...) is
 * refused with 400 before it is read; body-parser alone decoded any `utf-*` and charged the call. The
 * header is looked at only when it names a charset.
 */
function notUtf8(req: Request, types: string[]): AppError | undefined {
  const contentType = req.headers['content-type'];
  if (contentType === undefined || !/charset/i.test(contentType) || !req.is(types)) return undefined;
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType)?.[1]?.toLowerCase();
  if (charset === undefined || charset === 'utf-8') return undefined;
  const named = /^[\w.:-]{1,40}$/.test(charset) ? ` "${charset}"` : '';
  return new AppError('INVALID_REQUEST', `Unsupported charset${named}; send UTF-8.`);
}

/**
 * text/csv bodies (bulk uploads) up to `limit` bytes once decoded, as a string in req.body; errors deferred like JSON's.
 * Other routes refuse a string body in validation (it is not a JSON object).
 */
export function deferredCsvParser(limit = BODY_LIMIT_BYTES): (req: Request, res: Response, next: NextFunction) => void {
  const parse = express.text({ limit, type: 'text/csv', defaultCharset: 'utf-8' });
  return (req, res, next) => {
    const charsetError = notUtf8(req, ['text/csv']);
    if (charsetError) {
      deferredBodyErrors.set(req, charsetError);
      return next();
    }
    parse(req, res, (error?: unknown) => {
      // Wrapped like JSON's, so that the filter answers it as the client's (400/413), never as a 500.
      if (error) deferredBodyErrors.set(req, new BodyParserError(error));
      next();
    });
  };
}

/** Iterative, so that measuring a hostile body cannot itself overflow the stack. */
export function depthExceeds(value: unknown, maxDepth: number): boolean {
  return bodyShape(value, maxDepth).tooDeep;
}

/** Whether a parsed body is nested deeper than `maxDepth`, and how many object keys it holds (one walk). */
export function bodyShape(value: unknown, maxDepth: number): { tooDeep: boolean; keys: number } {
  const stack: Array<[unknown, number]> = [[value, 0]];
  let keys = 0;
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= maxDepth) return { tooDeep: true, keys };
    if (Array.isArray(node)) {
      for (const child of node) stack.push([child, depth + 1]);
    } else {
      for (const key in node) {
        keys++;
        stack.push([(node as Record<string, unknown>)[key], depth + 1]);
      }
    }
  }
  return { tooDeep: false, keys };
}

/**
 * Whatever the body parser (body-parser, raw-body, zlib) failed with: the client's bytes could not be
 * read as a body. Wrapped so that the exception filter answers every such error, including the ones
 * that carry no `type` (a gzip, br or deflate stream that is not one), as the client's: never a 500.
 */
export class BodyParserError extends Error {
  readonly type: string | undefined;
  readonly status: number | undefined;

  constructor(readonly original: unknown) {
    const { type, status, message } = (original ?? {}) as { type?: unknown; status?: unknown; message?: unknown };
    super(typeof message === 'string' ? message : 'body parser error');
    this.name = 'BodyParserError';
    this.type = typeof type === 'string' ? type : undefined;
    this.status = typeof status === 'number' ? status : undefined;
  }
}

/**
 * The answer to each error type body-parser and raw-body raise (their `type` field). A unit test reads
 * the installed parsers' sources and fails when a type appears that this table does not know.
 */
export const BODY_PARSER_ANSWERS: Record<string, { code: ErrorCode; message?: string }> = {
  'entity.parse.failed': { code: 'INVALID_REQUEST', message: 'The request body is not valid JSON.' },
  'entity.too.large': { code: 'PAYLOAD_TOO_LARGE' },
  'entity.verify.failed': { code: 'INVALID_REQUEST', message: 'The request body was refused.' },
  'encoding.unsupported': { code: 'INVALID_REQUEST', message: 'Unsupported Content-Encoding: send identity, gzip, deflate or br.' },
  'charset.unsupported': { code: 'INVALID_REQUEST', message: 'Unsupported charset; send UTF-8.' },
  'parameters.too.many': { code: 'PAYLOAD_TOO_LARGE', message: 'The request body has too many parameters.' },
  'request.aborted': { code: 'INVALID_REQUEST', message: 'The request was aborted by the client.' },
  'request.size.invalid': { code: 'INVALID_REQUEST', message: 'The request body does not match its Content-Length.' },
  'stream.encoding.set': { code: 'INVALID_REQUEST', message: 'The request body could not be read.' },
  'stream.not.readable': { code: 'INVALID_REQUEST', message: 'The request body could not be read.' },
};

const UNDECODABLE = 'The request body could not be decoded: it does not match its Content-Encoding.';

/** 413 for a body over the limit, otherwise 400 INVALID_REQUEST: what a body parser error is answered. */
export function bodyParserAnswer(error: BodyParserError): { code: ErrorCode; message?: string } {
  const known = error.type === undefined ? undefined : BODY_PARSER_ANSWERS[error.type];
  if (known) return known;
  if (error.status === 413) return { code: 'PAYLOAD_TOO_LARGE' };
  // No type: zlib's own error, raised while inflating (Z_DATA_ERROR, ERR_BROTLI..., ERR_ZSTD...).
  return { code: 'INVALID_REQUEST', message: UNDECODABLE };
}

export function takeDeferredBodyError(req: Request): unknown {
  return deferredBodyErrors.get(req);
}

