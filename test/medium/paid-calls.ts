import type { Request } from 'express';
import type { Caller } from '../../src/common/caller';
import { AllExceptionsFilter } from '../../src/common/all-exceptions.filter';
import { ErrorCode } from '../../src/common/errors';
import { FilterService } from '../../src/filter/filter.service';
import type { TestAccount } from '../factories/accounts';
import { TEST_NUMBERS } from '../helpers/numbers';
import type { Medium } from './medium';

/** A paid call's outcome as the service gives it: the answer's bytes, or the error the client would get. */
export type CallOutcome = { ok: true; body: string; replayed: boolean } | { ok: false; code: ErrorCode; message: string | undefined; error: unknown };

/** The code and message the one exception filter answers an error with (its own mapping, as over HTTP). */
const answerTo = (error: unknown) => new AllExceptionsFilter()['describe'](error, {} as Request);

export interface CallOptions {
  /** The Idempotency-Key (none by default). */
  key?: string;
  source?: string;
  /** The HTTP client, as the controller passes it (src/common/caller.ts); none by default. */
  caller?: Caller;
}

/**
 * /filter's service, called as its controller does once the guards have let the request through (no
 * HTTP): `call(account, phone)` resolves to the answer, or to the code and message the exception filter
 * would answer its error with; it never throws.
 */
export function paidCalls(m: Pick<Medium, 'get'>): (account: TestAccount, phone?: string, options?: CallOptions) => Promise<CallOutcome> {
  const filters = m.get(FilterService);
  return async (account, phone = TEST_NUMBERS.connected, options = {}) => {
    try {
      const answer = await filters.filter(
        { accountId: account.id, keyId: 'medium-test', plan: { name: 'enterprise', limit: 1_000_000, windowSeconds: 1 } },
        { phone, source: options.source },
        options.key,
        {},
        options.caller,
      );
      return { ok: true, ...answer };
    } catch (error) {
      const { code, message } = answerTo(error);
      return { ok: false, code, message, error };
    }
  };
}

/** The outcomes' codes ('OK' for an answer), in order: what a list of statuses was over HTTP. */
export const codesOf = (outcomes: CallOutcome[]): string[] => outcomes.map((outcome) => (outcome.ok ? 'OK' : outcome.code));
