import { Injectable, Logger } from '@nestjs/common';
import ipaddr from 'ipaddr.js';
import { CheckRegistry } from '../checks/check-registry';
import type { CheckAnswer } from '../checks/check-definition';
import { FACT_FIELDS, type KnownFacts, knownFacts } from '../checks/phone-answer.dto';
import { Clock } from '../common/clock';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { LookupService } from '../provider/lookup.service';
import { SettingsService } from '../settings/settings.service';
import { CountersUnavailable } from './counters/counter-store';
import { HOUR_MS, RiskCounters } from './counters/risk-counters';
import { DEFAULT_DESTINATIONS } from './destination-defaults';
import { DestinationTable } from './destination-table';
import type { RiskVerdictDto } from './dto/risk.dto';
import { ListRuns } from './list-runs';
import { rangesOf } from './number-ranges';
import { type ObservedCounts, type RiskEvent, scoreOf } from './scoring';

export const COUNTERS_UNAVAILABLE =
  "The risk counters (Redis) could not be reached, so no verdict was made. Nothing was charged (the call's credits were refunded); please retry.";

/** What a verdict is asked about, as the route gives it. */
export interface VerdictRequest {
  e164: string;
  source: string;
  event: RiskEvent;
  ip: string | null;
}

/** One entry of a bulk job checked with `risk: true`: its number, the job's source, and what the job's own lookup answered. */
export interface ListEntry {
  e164: string;
  source: string;
  /** The answers of the job's checks for the number (read before the cache: fresher, and paid for by this job). */
  answered: Readonly<Record<string, CheckAnswer>>;
}

/** The event a bulk list's verdicts are made for: a list about to be texted is neither a sign-up nor a login. */
export const LIST_EVENT: RiskEvent = 'other';

/**
 * The risk verdict without its billing (docs/sms-pumping.md): signals from the numbering plan, the
 * destination table, the counters of what was asked and the answers already known, scored by scoring.ts
 * with the account's thresholds. The route's verdict (RiskService) records its ask; a bulk job's entry
 * only reads the counters and adds the runs within its own list (ListRuns). Throws 503
 * SERVICE_UNAVAILABLE when the counters cannot be reached.
 */
@Injectable()
export class RiskVerdicts {
  private readonly logger = new Logger(RiskVerdicts.name);
  private readonly destinations: DestinationTable;
  /** The checks whose records hold liveness, line type or SIM swap: their cached answers are read, never asked for. */
  private readonly factChecks: string[];

  constructor(
    private readonly settings: SettingsService,
    private readonly lookups: LookupService,
    private readonly counters: RiskCounters,
    private readonly clock: Clock,
    registry: CheckRegistry,
    config: AppConfig,
  ) {
    this.destinations = new DestinationTable(config.risk.destinations ?? DEFAULT_DESTINATIONS);
    const factFields: readonly string[] = FACT_FIELDS;
    this.factChecks = registry
      .all()
      .filter((check) => check.fields.some((field) => factFields.includes(field)))
      .map((check) => check.name);
  }

  /** The route's verdict: the ask is recorded in the counters, which answer what they saw with it. */
  async ofAsk(accountId: string, request: VerdictRequest): Promise<RiskVerdictDto> {
    return this.verdict(accountId, request.e164, request.event, {}, (at, ranges, country, graceSeconds) =>
      this.counters.observe({ accountId, source: request.source, e164: request.e164, ranges, country, ip: ipScope(request.ip), at, graceSeconds }),
    );
  }

  /** The runs within a bulk job's list (its valid numbers), read by each of its entries' verdicts. */
  listOf(numbers: Iterable<string>): ListRuns {
    return new ListRuns(numbers);
  }

  /**
   * A bulk entry's verdict: the live counters are read, not fed (a list is not a burst of sign-ups), and
   * the runs within the list count as asked now. Liveness, line type and SIM swap come from the job's own
   * answers, then the cache.
   */
  async ofListEntry(accountId: string, entry: ListEntry, list: ListRuns): Promise<RiskVerdictDto> {
    return this.verdict(accountId, entry.e164, LIST_EVENT, entry.answered, async (at, ranges, country, graceSeconds) => {
      const live = await this.counters.observe({ accountId, source: entry.source, e164: entry.e164, ranges, country, ip: null, at, graceSeconds }, { record: false });
      const inList = list.of(entry.e164);
      // The larger of the live count and the list's: a number both asked live and listed is not counted twice.
      return { ...live, blockHour: Math.max(live.blockHour, inList.block), nearbyHour: Math.max(live.nearbyHour, inList.nearby) };
    });
  }

  private async verdict(
    accountId: string,
    e164: string,
    event: RiskEvent,
    answered: Readonly<Record<string, CheckAnswer>>,
    count: (at: number, ranges: ReturnType<typeof rangesOf>, country: string | null, graceSeconds: number) => Promise<ObservedCounts>,
  ): Promise<RiskVerdictDto> {
    const at = this.clock.now();
    const [risk, plan] = [await this.settings.riskFor(accountId), this.lookups.describe(e164)];
    const ranges = rangesOf(e164);
    const [counts, cached] = await Promise.all([
      count(at, ranges, plan.region, risk.thresholds.verification_grace_seconds).catch((error: unknown) => {
        if (!(error instanceof CountersUnavailable)) throw error;
        this.logger.warn(`Risk verdict not made: ${error.message}`);
        throw new AppError('SERVICE_UNAVAILABLE', COUNTERS_UNAVAILABLE);
      }),
      this.lookups.cachedAnswers(e164, this.factChecks.filter((check) => !(check in answered))),
    ]);
    const facts = knownFacts([...Object.values(answered), ...Object.values(cached)]);
    return scoreOf(
      {
        event,
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
}

/** A known SIM-swap answer: hours since the last change (from its date) and its own verdict. */
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
