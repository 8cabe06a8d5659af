import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { anyCheckEnabled, NO_CHECK_ENABLED } from '../checks/checks';
import { AppError } from '../common/errors';
import { maskPhone } from '../common/phone';
import { CreditsService } from '../credits/credits.service';
import { FilterResultDto } from '../provider/dto/filter-result.dto';
import { LookupService } from '../provider/lookup.service';
import { SettingsService } from '../settings/settings.service';
import { FilterRequestDto } from './dto/filter.dto';
import { IdempotencyService, SerializedAnswer } from '../idempotency/idempotency.service';

/**
 * The paid lookup: settings → price → charge → the six fields (LookupService.check: cache or
 * provider) → settle, or refund on failure. A call whose answer is known before it is charged (every
 * enabled check cached, or a number invalid for its plan) is charged settled in one statement; the
 * others are answered only once their settle is in the database, so an answered call is never
 * refunded as "never answered". No transaction is held open across the network call.
 */
@Injectable()
export class FilterService {
  private readonly logger = new Logger(FilterService.name);

  constructor(
    private readonly settings: SettingsService,
    private readonly credits: CreditsService,
    private readonly lookups: LookupService,
    private readonly idempotency: IdempotencyService,
  ) {}

  /** The answer as the bytes of its JSON body, which an Idempotency-Key replay sends again unchanged. */
  filter(account: AuthenticatedAccount, request: FilterRequestDto, idempotencyKey?: string): Promise<SerializedAnswer> {
    const source = request.source ?? 'internal';
    return this.idempotency.run(account.accountId, idempotencyKey, { phone: request.phone, source }, {
      charged: async (keyId) => JSON.stringify(await this.paidLookup(account.accountId, request.phone, source, keyId)),
      free: async () => JSON.stringify(await this.lookups.check(request.phone, (await this.settings.checksFor(account.accountId)).checks)),
    });
  }

  private async paidLookup(accountId: string, e164: string, source: string, idempotencyKeyId?: string): Promise<FilterResultDto> {
    const { checks, cost } = await this.settings.checksFor(accountId);
    if (!anyCheckEnabled(checks)) throw new AppError('INVALID_REQUEST', NO_CHECK_ENABLED);
    const details = { reference: `charge:${randomUUID()}`, phone: maskPhone(e164), source, idempotencyKeyId };
    const cached = await this.lookups.checkFromCache(e164, checks);
    if (cached.result) {
      await this.credits.charge(accountId, cost, { ...details, settled: true });
      return cached.result;
    }
    const charge = await this.credits.charge(accountId, cost, details);
    let result: FilterResultDto;
    try {
      result = await this.lookups.check(e164, checks, { known: cached.known });
    } catch (error) {
      await this.credits
        .refund(charge.id, error instanceof AppError ? error.code : 'lookup failed')
        .catch((refundError: Error) => this.logger.warn(`Refund of charge ${charge.id} deferred to the sweep: ${refundError.message}`));
      throw error;
    }
    await this.credits.settle(charge.id);
    return result;
  }
}
