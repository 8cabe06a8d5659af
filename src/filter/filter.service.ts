import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CheckRegistry } from '../checks/check-registry';
import type { EnabledChecks } from '../checks/checks';
import { PhoneAnswerDto } from '../checks/phone-answer.dto';
import { provenanceOf, type StoredProvenance } from '../checks/provenance';
import type { Caller } from '../common/caller';
import { AppError } from '../common/errors';
import { maskPhone } from '../common/phone';
import { CreditsService } from '../credits/credits.service';
import { LookupOptions, LookupService } from '../provider/lookup.service';

/** How fresh the answer must be (Cache-Control), as LookupService takes it. */
type LookupFreshness = Pick<LookupOptions, 'maxAgeSeconds' | 'checkOptions'>;
import { SettingsService } from '../settings/settings.service';
import { FilterRequestDto } from './dto/filter.dto';
import { IdempotencyService, SerializedAnswer } from '../idempotency/idempotency.service';

/**
 * The paid lookup: settings → price → charge → the number's report (LookupService.lookUp: cache or
 * provider), projected to /filter's six fields → settle, or refund on failure. A call whose answer is known before it is charged (every
 * enabled check cached, or a number invalid for its plan) is charged settled in one statement; the
 * others are answered only once their settle is in the database, so an answered call is never
 * refunded as "never answered". No transaction is held open across the network call.
 */
@Injectable()
export class FilterService {
  constructor(
    private readonly settings: SettingsService,
    private readonly credits: CreditsService,
    private readonly lookups: LookupService,
    private readonly idempotency: IdempotencyService,
    private readonly registry: CheckRegistry,
  ) {}

  /**
   * The answer as the bytes of its JSON body, which an Idempotency-Key replay sends again unchanged.
   * `freshness`: from the request's Cache-Control; the same price whether the answer is live or cached.
   * `caller`: the HTTP client, asked right before the charge (a gone or too-late call is neither charged nor looked up).
   */
  async filter(
    account: AuthenticatedAccount,
    request: FilterRequestDto,
    idempotencyKey?: string,
    freshness: LookupFreshness = {},
    caller?: Caller,
  ): Promise<SerializedAnswer> {
    const source = request.source ?? 'internal';
    // Read once, before the key is claimed: the charge is for these checks, and a retry answered
    // again for free (its answer not stored yet) gets these, not checks enabled since (review #15).
    const { checks, cost, options: checkOptions } = await this.settings.checksFor(account.accountId);
    return this.idempotency.run(
      account.accountId,
      idempotencyKey,
      { phone: request.phone, source },
      {
        charged: async (keyId) => JSON.stringify(await this.paidLookup(account.accountId, request.phone, source, { checks, cost }, { ...freshness, checkOptions }, keyId, caller)),
        rerunUncharged: async (charged) => {
          const checksCharged = (charged as EnabledChecks | null) ?? (await this.settings.checksFor(account.accountId)).checks;
          return JSON.stringify(this.registry.toPhoneAnswer(await this.lookups.lookUp(request.phone, checksCharged, { ...freshness, checkOptions })));
        },
      },
      checks,
      request.phone,
    );
  }

  private async paidLookup(
    accountId: string,
    e164: string,
    source: string,
    { checks, cost }: { checks: EnabledChecks; cost: number },
    freshness: LookupFreshness,
    idempotencyKeyId?: string,
    caller?: Caller,
  ): Promise<PhoneAnswerDto> {
    this.settings.requireAnyCheck(checks);
    const details = { reference: `charge:${randomUUID()}`, phone: maskPhone(e164), source, idempotencyKeyId };
    const cached = await this.lookups.lookUpCached(e164, checks, freshness);
    if (cached.report) {
      // Provenance (which provider answered each check, when) goes with the charge: the cached answers keep theirs.
      await this.credits.charge(accountId, cost, { ...details, settled: true, answeredBy: provenanceOf(cached.report.answers) }, caller);
      return this.registry.toPhoneAnswer(cached.report);
    }
    const charge = await this.credits.charge(accountId, cost, details, caller);
    let result: PhoneAnswerDto;
    let answeredBy: StoredProvenance | null;
    try {
      const report = await this.lookups.lookUp(e164, checks, { ...freshness, known: cached.known });
      result = this.registry.toPhoneAnswer(report);
      answeredBy = provenanceOf(report.answers);
    } catch (error) {
      await this.credits.refundFailedCall(charge.id, error instanceof AppError ? error.code : 'lookup failed');
      throw error;
    }
    await this.credits.settle(charge.id, answeredBy, caller);
    return result;
  }
}
