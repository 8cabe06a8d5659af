import { Injectable, Logger } from '@nestjs/common';
import ipaddr from 'ipaddr.js';
import { randomUUID } from 'node:crypto';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CheckRegistry } from '../checks/check-registry';
import { FACT_FIELDS, type KnownFacts, knownFacts } from '../checks/phone-answer.dto';
import { RISK_VERDICT } from '../checks/priced-calls';
import type { Caller } from '../common/caller';
import { Clock } from '../common/clock';
import { AppError } from '../common/errors';
import { maskPhone } from '../common/phone';
import { AppConfig } from '../config/app-config';
import { CreditsService } from '../credits/credits.service';
import { IdempotencyService, SerializedAnswer } from '../idempotency/idempotency.service';
import { LookupService } from '../provider/lookup.service';
import { SettingsService } from '../settings/settings.service';
import { CountersUnavailable } from './counters/counter-store';
import { HOUR_MS, RiskCounters } from './counters/risk-counters';
import { DEFAULT_DESTINATIONS } from './destination-defaults';
import { DestinationTable } from './destination-table';
import { RiskFeedbackAnswerDto, RiskFeedbackDto, RiskRequestDto, RiskVerdictDto } from './dto/risk.dto';
import { rangesOf } from './number-ranges';
import { RiskRecords } from './risk-records';
import { type RiskEvent, scoreOf } from './scoring';

export const COUNTERS_UNAVAILABLE =
  "The risk counters (Redis) could not be reached, so no verdict was made. Nothing was charged (the call's credits were refunded); please retry.";

export const NO_VERDICT_ASKED =
  'This account asked no risk verdict for this number in the last 24 hours: feedback is accepted only for a number of an earlier POST /api/v1/risk (within 24 h).';

/** What a verdict is asked about, as the route and bulk jobs give it. */
export interface VerdictRequest {
  e164: string;
  source: string;
  event: RiskEvent;
  ip: string | null;
}

/**
 * The risk verdict (docs/sms-pumping.md): signals computed here from the numbering plan, the destination
 * table, the counters of what was asked (ranges, runs, IPs, sources, verification rates) and the answers
 * the lookup cache already holds; scored by scoring.ts with the account's thresholds. The paid call
 * follows /filter's path: charge (one statement) → verdict → settle, or refund when no verdict could
 * be made; an Idempotency-Key replays the first answer, charged once.
 */
@Injectable()
export class RiskService {
  private readonly logger = new Logger(RiskService.name);
  private readonly destinations: DestinationTable;
  /** The checks whose records hold liveness, line type or SIM swap: their cached answers are read, never asked for. */
  private readonly factChecks: string[];

  constructor(
    private readonly settings: SettingsService,
    private readonly credits: CreditsService,
    private readonly lookups: LookupService,
    private readonly idempotency: IdempotencyService,
    private readonly registry: CheckRegistry,
    private readonly counters: RiskCounters,
    private readonly records: RiskRecords,
    private readonly clock: Clock,
    config: AppConfig,
  ) {
    this.destinations = new DestinationTable(config.risk.destinations ?? DEFAULT_DESTINATIONS);
    const factFields: readonly string[] = FACT_FIELDS;
    this.factChecks = registry
      .all()
      .filter((check) => check.fields.some((field) => factFields.includes(field)))
      .map((check) => check.name);
  }

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
    await this.credits.settle(charge.id, null);
    return verdict;
  }

  /**
   * The verdict for one number asked by an account (the route's, and each entry of a bulk job submitted
   * with `risk: true`): the ask is recorded in the counters, which answer what they saw with it.
   * 503 SERVICE_UNAVAILABLE when the counters cannot be reached.
   */
  async verdictOf(accountId: string, request: VerdictRequest): Promise<RiskVerdictDto> {
    const { e164 } = request;
    const at = this.clock.now();
    const [risk, plan] = [await this.settings.riskFor(accountId), this.lookups.describe(e164)];
    const ranges = rangesOf(e164);
    const [counts, cached] = await Promise.all([
      this.counters
        .observe({ accountId, source: request.source, e164, ranges, country: plan.region, ip: ipScope(request.ip), at, graceSeconds: risk.thresholds.verification_grace_seconds })
        .catch((error: unknown) => {
          if (!(error instanceof CountersUnavailable)) throw error;
          this.logger.warn(`Risk verdict not made: ${error.message}`);
          throw new AppError('SERVICE_UNAVAILABLE', COUNTERS_UNAVAILABLE);
        }),
      this.lookups.cachedAnswers(e164, this.factChecks),
    ]);
    const facts = knownFacts(Object.values(cached));
    return scoreOf(
      {
        event: request.event,
        country: plan.region,
        validForPlan: plan.validForPlan,
        planType: plan.lineType,
        knownLineType: facts.lineType,
        destination: this.destinations.riskOf(e164, plan.region, risk.destinations),
        liveness: facts.status,
        simSwap: simSwapOf(facts, at),
        ranges,
        counts,
      },
      risk.thresholds,
    );
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

/** A cached SIM-swap answer, when one is known: hours since the last change (from its date) and its own verdict. */
function simSwapOf(facts: KnownFacts, now: number): { hoursSince: number | null; swapped: boolean | null } | null {
  if (facts.simSwapped === null && facts.lastSimSwapAt === null) return null;
  return { hoursSince: facts.lastSimSwapAt === null ? null : (now - Date.parse(facts.lastSimSwapAt)) / HOUR_MS, swapped: facts.simSwapped };
}

/**
 * What an `ip` is counted as: an IPv4 address (an IPv4-mapped IPv6 one included) as itself, an IPv6
 * address by its /64 (one subscriber's whole network: rotating within it changes nothing).
 */
export function ipScope(ip: string | null): string | null {
  if (ip === null) return null;
  try {
    const address = ipaddr.process(ip);
    if (address.kind() === 'ipv4') return address.toString();
    return (address as ipaddr.IPv6).toNormalizedString().split(':').slice(0, 4).join(':') + '::/64';
  } catch {
    return ip;
  }
}
