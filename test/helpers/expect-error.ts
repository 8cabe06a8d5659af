import type { Response } from 'supertest';
import type { ErrorCode } from '../../src/common/errors';

/** Asserts the contract's error response: status, code, a message, JSON content type, nothing else in the body. */
export function expectError(res: Response, status: number, code: ErrorCode): void {
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status, code });
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'message']);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.message.length).toBeGreaterThan(0);
  expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
}
