import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { anyCheckEnabled, NO_CHECK_ENABLED } from '../checks/checks';
import { AppError } from '../common/errors';
import { maskPhone } from '../common/phone';
import { CreditsService } from '../credits/credits.service';
import { FilterResultDto } from '../provider/dto/filter-result.dto';
import { LookupFreshness, LookupService } from '../provider/lookup.service';
import { SettingsService } from '../settings/settings.service';
import { FilterRequestDto } from './dto/filter.dto';
import { IdempotencyService, IdempotentOutcome } from './idempotency.service';

/**
 * The paid lookup: settings → price → charge → the six fields (LookupService.check: cache or
 * provider) → refund on failure. The charge and the refund are each one short statement; no transaction is held open
 * across the network call.
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

  /** `freshness`: from the request's Cache-Control; the same price whether the answer is live or cached. */
  filter(
    account: AuthenticatedAccount,
    request: FilterRequestDto,
    idempotencyKey?: string,
    freshness: LookupFreshness = {},
  ): Promise<IdempotentOutcome<FilterResultDto>> {
    const source = request.source ?? 'internal';
    return this.idempotency.run(account.accountId, idempotencyKey, { phone: request.phone, source }, () =>
      this.paidLookup(account.accountId, request.phone, source, freshness),
    );
  }

  private async paidLookup(accountId: string, e164: string, source: string, freshness: LookupFreshness): Promise<FilterResultDto> {
    const { checks, cost } = await this.settings.checksFor(accountId);
    if (!anyCheckEnabled(checks)) throw new AppError('INVALID_REQUEST', NO_CHECK_ENABLED);
    const charge = await this.credits.charge(accountId, cost, { reference: `charge:${randomUUID()}`, phone: maskPhone(e164), source });
    let result: FilterResultDto;
    try {
      result = await this.lookups.check(e164, checks, freshness);
    } catch (error) {
      await this.credits
        .refund(charge.id, error instanceof AppError ? error.code : 'lookup failed')
        .catch((refundError: Error) => this.logger.warn(`Refund of charge ${charge.id} deferred to the sweep: ${refundError.message}`));
      throw error;
    }
    this.credits.settle(charge.id);
    return result;
  }
}
