import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CheckRegistry } from '../checks/check-registry';
import { RISK_VERDICT } from '../checks/priced-calls';
import type { Caller } from '../common/caller';
import { AppError } from '../common/errors';
import { maskPhone } from '../common/phone';
import { CreditsService } from '../credits/credits.service';
import { IdempotencyService, SerializedAnswer } from '../idempotency/idempotency.service';
import { CountersUnavailable } from './counters/counter-store';
import { RiskFeedbackAnswerDto, RiskFeedbackDto, RiskRequestDto, RiskVerdictDto } from './dto/risk.dto';
import { RiskRecords } from './risk-records';
import { RiskVerdicts, type VerdictRequest } from './risk-verdicts';

export { COUNTERS_UNAVAILABLE, ipScope, type VerdictRequest } from './risk-verdicts';

export const NO_VERDICT_ASKED =
  'This account asked no risk verdict for this number in the last 24 hours: feedback is accepted only for a number of an earlier POST /api/v1/risk (within 24 h).';

/**
 * The risk verdict's route (docs/sms-pumping.md): the verdict itself is RiskVerdicts' (shared with bulk
 * jobs checked with `risk: true`); this is its billing and its feedback. The paid call
 * follows /filter's path: charge (one statement) → verdict → settle, or refund when no verdict could
 * be made; an Idempotency-Key replays the first answer, charged once.
 */
@Injectable()
export class RiskService {
  constructor(
    private readonly credits: CreditsService,
    private readonly idempotency: IdempotencyService,
    private readonly registry: CheckRegistry,
    private readonly records: RiskRecords,
    private readonly verdicts: RiskVerdicts,
  ) {}

  /** POST /api/v1/risk: the verdict as the bytes of its JSON body (an Idempotency-Key replay sends them again). */
  async verdict(account: AuthenticatedAccount, body: RiskRequestDto, idempotencyKey?: string, caller?: Caller): Promise<SerializedAnswer> {
    const request: VerdictRequest = { e164: body.phone, source: body.source ?? 'internal', event: body.event ?? 'signup', ip: body.ip ?? null };
    return this.idempotency.run(
      account.accountId,
      idempotencyKey,
      { route: 'risk', phone: request.e164, source: request.source, event: request.event, ip: request.ip },
      {
        charged: async (keyId) => JSON.stringify(await this.paidVerdict(account.accountId, request, keyId, caller)),
        rerunUncharged: async () => JSON.stringify(await this.verdictOf(account.accountId, request)),
      },
      null,
      request.e164,
    );
  }

  private async paidVerdict(accountId: string, request: VerdictRequest, idempotencyKeyId?: string, caller?: Caller): Promise<RiskVerdictDto> {
    const price = this.registry.callPrice(RISK_VERDICT);
    const charge = await this.credits.charge(accountId, price, {
      reference: `charge:${randomUUID()}`,
      phone: maskPhone(request.e164),
      source: request.source,
      idempotencyKeyId,
    }, caller);
    let verdict: RiskVerdictDto;
    try {
      verdict = await this.verdictOf(accountId, request);
    } catch (error) {
      await this.credits.refundFailedCall(charge.id, error instanceof AppError ? error.code : 'risk verdict failed');
      throw error;
    }
    await this.credits.settle(charge.id, null, caller);
    return verdict;
  }

  /** The verdict for one number asked by an account, its ask recorded in the counters (RiskVerdicts.ofAsk). */
  verdictOf(accountId: string, request: VerdictRequest): Promise<RiskVerdictDto> {
    return this.verdicts.ofAsk(accountId, request);
  }

  /** POST /api/v1/risk/feedback: free; 404 for a number the account asked no verdict for in 24 h. */
  async feedback(account: AuthenticatedAccount, body: RiskFeedbackDto): Promise<RiskFeedbackAnswerDto> {
    let recorded: boolean;
    try {
      recorded = await this.records.feedback(account.accountId, body.phone, body.verified);
    } catch (error) {
      if (!(error instanceof CountersUnavailable)) throw error;
      throw new AppError('SERVICE_UNAVAILABLE', 'The risk counters (Redis) could not be reached: the feedback was not recorded. Please retry.');
    }
    if (!recorded) throw new AppError('NOT_FOUND', NO_VERDICT_ASKED);
    return { recorded: true };
  }
}
