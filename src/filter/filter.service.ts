import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { AppError } from '../common/errors';
import { maskPhone } from '../common/phone';
import { CreditsService } from '../credits/credits.service';
import { LookupService } from '../provider/lookup.service';
import type { EnabledChecks } from '../provider/lookup.types';
import { describeNumber } from '../provider/numbering-plan';
import { anyCheckEnabled } from '../settings/pricing';
import { SettingsService } from '../settings/settings.service';
import { FilterRequestDto, FilterResultDto } from './dto/filter.dto';
import { IdempotencyService, IdempotentOutcome } from './idempotency.service';
import { composeResult } from './result';

export const NO_CHECK_ENABLED =
  'No check is enabled in your account settings, so there is nothing to look up. Enable at least one with PATCH /api/v1/settings.';

/**
 * The paid lookup: settings → price → charge → cache or provider → refund on failure → the six
 * fields. The charge and the refund are each one short statement; no transaction is held open
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

  filter(account: AuthenticatedAccount, request: FilterRequestDto, idempotencyKey?: string): Promise<IdempotentOutcome<FilterResultDto>> {
    const source = request.source ?? 'internal';
    return this.idempotency.run(account.accountId, idempotencyKey, { phone: request.phone, source }, () =>
      this.paidLookup(account.accountId, request.phone, source),
    );
  }

  private async paidLookup(accountId: string, e164: string, source: string): Promise<FilterResultDto> {
    const { checks, cost } = await this.settings.checksFor(accountId);
    if (!anyCheckEnabled(checks)) throw new AppError('INVALID_REQUEST', NO_CHECK_ENABLED);
    const charge = await this.credits.charge(accountId, cost, { reference: `charge:${randomUUID()}`, phone: maskPhone(e164), source });
    let result: FilterResultDto;
    try {
      result = await this.answer(e164, checks);
    } catch (error) {
      await this.credits
        .refund(charge.id, error instanceof AppError ? error.code : 'lookup failed')
        .catch((refundError: Error) => this.logger.warn(`Refund of charge ${charge.id} deferred to the sweep: ${refundError.message}`));
      throw error;
    }
    this.credits.settle(charge.id);
    return result;
  }

  /** The six fields for one number (no billing): the numbering plan, then the enabled checks. */
  async answer(e164: string, checks: EnabledChecks): Promise<FilterResultDto> {
    const facts = describeNumber(e164);
    const answers = facts.validForPlan ? await this.lookups.lookup(e164, checks) : {};
    return composeResult(facts, checks, answers);
  }
}
