import { Injectable, Logger } from '@nestjs/common';
import { createHash } from 'node:crypto';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { IdempotencyRepository } from './idempotency.repository';

export type IdempotentOutcome<T> = { replayed: false; result: T } | { replayed: true; result: T };

/**
 * `Idempotency-Key` (docs/api.md): a retry with the same key and body within 24 h gets the first
 * response again and is not charged again. Only successful answers are kept: a call that failed
 * (402, 503...) charged nothing in the end, so its retry runs again.
 */
@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  constructor(
    private readonly calls: IdempotencyRepository,
    private readonly config: AppConfig,
  ) {}

  async run<T>(accountId: string, key: string | undefined, request: unknown, work: () => Promise<T>): Promise<IdempotentOutcome<T>> {
    if (key === undefined) return { replayed: false, result: await work() };
    const requestHash = createHash('sha256').update(JSON.stringify(request)).digest('hex');
    if (!(await this.calls.claim(accountId, key, requestHash, this.config.unsettledChargeRefundAfterSeconds))) {
      const stored = await this.calls.find(accountId, key);
      if (stored?.requestHash !== requestHash) {
        throw new AppError('IDEMPOTENCY_CONFLICT', 'This Idempotency-Key was already used with a different request body.');
      }
      if (stored.status !== 'completed') {
        throw new AppError('IDEMPOTENCY_CONFLICT', 'A request with this Idempotency-Key is still running; retry when it has answered.');
      }
      return { replayed: true, result: stored.responseBody as T };
    }
    let result: T;
    try {
      result = await work();
    } catch (error) {
      await this.calls.release(accountId, key).catch(() => undefined);
      throw error;
    }
    // The call was answered (and charged): never turn that into an error, nor free the key for a
    // second charge. If storing the answer fails, the key stays in progress: a retry gets 409.
    await this.calls.complete(accountId, key, result).catch((error: Error) => {
      this.logger.warn(`Idempotency-Key answer not stored (retries get 409 until it expires): ${error.message}`);
    });
    return { replayed: false, result };
  }
}
