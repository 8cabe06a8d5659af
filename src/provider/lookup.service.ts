import { Injectable, Logger, Optional } from '@nestjs/common';
import { AppError } from '../common/errors';
import { CHECK_NAMES, CheckName, EnabledChecks } from '../checks/checks';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics';
import { LookupCacheStore } from './lookup-cache.store';
import { LookupProvider, ProviderUnavailableError } from './lookup-provider';
import { composeResult } from './answer';
import { FilterResultDto } from './dto/filter-result.dto';
import { LookupAnswers } from './lookup.types';
import { describeNumber } from './numbering-plan';
import { SingleFlight } from './single-flight';
import { maskPhone } from '../common/phone';

type FailureReason = ProviderUnavailableError['reason'];
export type LookupOutcome = 'ok' | FailureReason;

/** Plain counters, cheap to read, for /metrics later. */
export interface LookupCounters {
  cache: { hits: number; misses: number; storeErrors: number; store: 'memory' | 'redis' };
  /** Provider calls (cache misses that reached the adapter), by check and outcome. */
  lookups: Record<CheckName, Record<LookupOutcome, number>>;
  /** Callers that joined an identical lookup already in flight instead of starting their own. */
  singleFlightShared: number;
}

/** Which LookupAnswers field and which port method each check uses. */
const CHECKS = {
  network_status: { field: 'networkStatus', ask: (provider: LookupProvider, e164: string) => provider.networkStatus(e164) },
  line_type: { field: 'numberType', ask: (provider: LookupProvider, e164: string) => provider.numberType(e164) },
  portability: { field: 'portability', ask: (provider: LookupProvider, e164: string) => provider.portability(e164) },
} as const satisfies Record<CheckName, { field: keyof LookupAnswers; ask: (provider: LookupProvider, e164: string) => Promise<object> }>;

const OUTCOMES: readonly LookupOutcome[] = ['ok', 'timeout', 'network', 'upstream_error', 'circuit_open', 'unauthorized'];

/** Bump when the shape of a cached answer changes, so old entries are ignored rather than misread. */
const CACHE_KEY_VERSION = 'v2';

/** A cached answer and when it was obtained from the provider (ms since the epoch), for `maxAgeSeconds`. */
interface CachedAnswer {
  at: number;
  answer: object;
}

/**
 * How fresh an answer must be. `maxAgeSeconds` 0: looked up live, never from the cache; N: a cached
 * answer older than N seconds is not used; absent: any cached answer within its TTL. A live answer
 * refreshes the cache either way.
 */
export interface LookupFreshness {
  maxAgeSeconds?: number;
}

/**
 * Answers the enabled checks for one number: each check from the cache when fresh, otherwise from the
 * provider (one upstream call per number and check at a time, however many callers ask), then cached
 * with its own TTL. Failures are never cached. Callers pass numbers valid for their numbering plan.
 */
@Injectable()
export class LookupService {
  private readonly logger = new Logger(LookupService.name);
  private readonly flights = new SingleFlight();
  private readonly ttlSeconds: Record<CheckName, number>;
  private hits = 0;
  private misses = 0;
  private shared = 0;
  private readonly outcomes = Object.fromEntries(
    CHECK_NAMES.map((check) => [check, Object.fromEntries(OUTCOMES.map((outcome) => [outcome, 0]))]),
  ) as Record<CheckName, Record<LookupOutcome, number>>;

  constructor(
    private readonly provider: LookupProvider,
    private readonly store: LookupCacheStore,
    config: AppConfig,
    @Optional() private readonly metrics?: Metrics,
  ) {
    this.ttlSeconds = config.cache.ttlSeconds;
  }

  /**
   * The six fields for one number, without billing: the numbering plan (free), then the enabled
   * checks for a number valid for its plan. Throws AppError PROVIDER_UNAVAILABLE like `lookup`.
   */
  async check(e164: string, checks: EnabledChecks, freshness: LookupFreshness = {}): Promise<FilterResultDto> {
    const description = describeNumber(e164);
    const answers = description.validForPlan ? await this.lookup(e164, checks, freshness) : {};
    return composeResult(description, checks, answers);
  }

  /**
   * The answers of the enabled checks, run in parallel. Throws AppError PROVIDER_UNAVAILABLE when any
   * enabled check could not be answered (answers that did arrive are still cached for the next call).
   */
  async lookup(e164: string, checks: EnabledChecks, freshness: LookupFreshness = {}): Promise<LookupAnswers> {
    const enabled = CHECK_NAMES.filter((check) => checks[check]);
    const settled = await Promise.allSettled(enabled.map((check) => this.answer(check, e164, freshness.maxAgeSeconds)));
    const answers: LookupAnswers = {};
    const failures: string[] = [];
    settled.forEach((result, index) => {
      const check = enabled[index];
      if (result.status === 'fulfilled') {
        Object.assign(answers, { [CHECKS[check].field]: result.value });
      } else if (result.reason instanceof ProviderUnavailableError) {
        failures.push(`${check}: ${result.reason.reason} (${result.reason.message})`);
      } else {
        throw result.reason;
      }
    });
    if (failures.length > 0) {
      this.logger.warn(`lookup of ${maskPhone(e164)} failed: ${failures.join('; ')}`);
      const error = new AppError('PROVIDER_UNAVAILABLE');
      error.cause = failures;
      throw error;
    }
    return answers;
  }

  get counters(): LookupCounters {
    return {
      cache: { hits: this.hits, misses: this.misses, storeErrors: this.store.errors, store: this.store.kind },
      lookups: structuredClone(this.outcomes),
      singleFlightShared: this.shared,
    };
  }

  /**
   * Callers with different freshness never share a flight: a live caller must not be handed the
   * cached answer another caller is reading, but live callers at the same moment share one lookup.
   */
  private answer(check: CheckName, e164: string, maxAgeSeconds: number | undefined): Promise<object> {
    const key = `${CACHE_KEY_VERSION}:${check}:${e164}`;
    const flight = this.flights.run(maxAgeSeconds === undefined ? key : `${key}:max-age=${maxAgeSeconds}`, async () => {
      const cached = maxAgeSeconds === 0 ? undefined : await this.store.get<CachedAnswer>(key);
      if (cached !== undefined && (maxAgeSeconds === undefined || Date.now() - cached.at <= maxAgeSeconds * 1000)) {
        this.hits += 1;
        return cached.answer;
      }
      this.misses += 1;
      const fresh = await this.ask(check, e164);
      await this.store.set(key, { at: Date.now(), answer: fresh } satisfies CachedAnswer, this.ttlSeconds[check]);
      return fresh;
    });
    if (flight.shared) this.shared += 1;
    return flight.promise;
  }

  private async ask(check: CheckName, e164: string): Promise<object> {
    const timed = this.metrics?.startUpstreamTimer(check);
    try {
      const answer = await CHECKS[check].ask(this.provider, e164);
      this.outcomes[check].ok += 1;
      timed?.('ok');
      return answer;
    } catch (error) {
      if (error instanceof ProviderUnavailableError) this.outcomes[check][error.reason] += 1;
      timed?.(error instanceof ProviderUnavailableError ? error.reason : 'error');
      throw error;
    }
  }
}

