import { Injectable, Logger, Optional } from '@nestjs/common';
import { AppError } from '../common/errors';
import { CHECK_NAMES, CheckName, EnabledChecks } from '../checks/checks';
import { AppConfig } from '../config/app-config';
import { Metrics } from '../metrics/metrics';
import { LookupCacheStore } from './lookup-cache.store';
import { Lane, LookupProvider, ProviderUnavailableError } from './lookup-provider';
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
  network_status: { field: 'networkStatus', ask: (provider: LookupProvider, e164: string, lane: Lane) => provider.networkStatus(e164, lane) },
  line_type: { field: 'numberType', ask: (provider: LookupProvider, e164: string, lane: Lane) => provider.numberType(e164, lane) },
  portability: { field: 'portability', ask: (provider: LookupProvider, e164: string, lane: Lane) => provider.portability(e164, lane) },
} as const satisfies Record<CheckName, { field: keyof LookupAnswers; ask: (provider: LookupProvider, e164: string, lane: Lane) => Promise<object> }>;


const OUTCOMES: readonly LookupOutcome[] = ['ok', 'timeout', 'network', 'upstream_error', 'circuit_open', 'unauthorized'];

/** Bump when the shape of a cached answer changes, so old entries are ignored rather than misread. */
const CACHE_KEY_VERSION = 'v2';

/** A cached answer and when it was looked up (epoch ms), so that a caller can ask for a fresher one. */
interface CachedAnswer {
  answer: object;
  storedAt: number;
}

/** How a lookup is asked: the checks already known (from the cache), the lane (see Lane), the age bound. */
export interface LookupOptions {
  known?: LookupAnswers;
  lane?: Lane;
  /**
   * A cached answer older than this is not used: the number is looked up again and the cache
   * refreshed with the new answer. 0 = live (never from the cache: watchlist rounds,
   * `Cache-Control: no-cache`); undefined = any answer still within its TTL.
   */
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
   * checks for a number valid for its plan (those `known` are not asked again). Throws AppError
   * PROVIDER_UNAVAILABLE like `lookup`.
   */
  async check(e164: string, checks: EnabledChecks, options: LookupOptions = {}): Promise<FilterResultDto> {
    const description = describeNumber(e164);
    const answers = description.validForPlan ? await this.lookup(e164, checks, options) : {};
    return composeResult(description, checks, answers);
  }

  /**
   * The six fields when they are known without asking the upstream — a number invalid for its plan,
   * or every enabled check in the cache — so that a call can be charged settled, final at once.
   * Otherwise `result` is undefined and `known` holds the checks the cache had, for `check`.
   */
  async checkFromCache(e164: string, checks: EnabledChecks, { maxAgeSeconds }: Pick<LookupOptions, 'maxAgeSeconds'> = {}): Promise<{ result?: FilterResultDto; known: LookupAnswers }> {
    const description = describeNumber(e164);
    if (!description.validForPlan) return { result: composeResult(description, checks, {}), known: {} };
    const { answers, complete } = await this.cached(e164, checks, maxAgeSeconds);
    return { result: complete ? composeResult(description, checks, answers) : undefined, known: answers };
  }

  /**
   * What the cache holds for the enabled checks within the age bound, without asking the provider:
   * `complete` when every enabled check is there.
   */
  private async cached(e164: string, checks: EnabledChecks, maxAgeSeconds: number | undefined): Promise<{ answers: LookupAnswers; complete: boolean }> {
    const enabled = CHECK_NAMES.filter((check) => checks[check]);
    const found = await Promise.all(
      enabled.map(async (check) => {
        if (maxAgeSeconds === 0) return undefined;
        const cached = await this.store.get<CachedAnswer>(cacheKey(check, e164));
        return cached !== undefined && youngEnough(cached, maxAgeSeconds) ? cached.answer : undefined;
      }),
    );
    const answers: LookupAnswers = {};
    found.forEach((answer, index) => {
      if (answer !== undefined) Object.assign(answers, { [CHECKS[enabled[index]].field]: answer });
    });
    const hits = found.filter((answer) => answer !== undefined).length;
    this.hits += hits;
    return { answers, complete: hits === enabled.length };
  }

  /**
   * The answers of the enabled checks, run in parallel (those in `known` are not asked again). Throws
   * AppError PROVIDER_UNAVAILABLE when any enabled check could not be answered (answers that did
   * arrive are still cached for the next call).
   */
  async lookup(e164: string, checks: EnabledChecks, { known = {}, lane = 'interactive', maxAgeSeconds }: LookupOptions = {}): Promise<LookupAnswers> {
    const enabled = CHECK_NAMES.filter((check) => checks[check] && known[CHECKS[check].field] === undefined);
    const settled = await Promise.allSettled(enabled.map((check) => this.answer(check, e164, lane, maxAgeSeconds)));
    const answers: LookupAnswers = { ...known };
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
   * One check's answer. One flight per lane: a bulk lookup's failure (its own breaker) is never handed
   * to a live call. Callers with a bound on the age join only flights with the same bound (a live
   * caller never gets an answer read from the cache by another caller's flight).
   */
  private answer(check: CheckName, e164: string, lane: Lane, maxAgeSeconds: number | undefined): Promise<object> {
    const key = cacheKey(check, e164);
    const flightKey = maxAgeSeconds === undefined ? `${lane}:${key}` : `${lane}:${key}:max-age=${maxAgeSeconds}`;
    const flight = this.flights.run(flightKey, async () => {
      const cached = maxAgeSeconds === 0 ? undefined : await this.store.get<CachedAnswer>(key);
      if (cached !== undefined && youngEnough(cached, maxAgeSeconds)) {
        this.hits += 1;
        return cached.answer;
      }
      this.misses += 1;
      const fresh = await this.ask(check, e164, lane);
      await this.store.set(key, { answer: fresh, storedAt: Date.now() } satisfies CachedAnswer, this.ttlSeconds[check]);
      return fresh;
    });
    if (flight.shared) this.shared += 1;
    return flight.promise;
  }

  private async ask(check: CheckName, e164: string, lane: Lane): Promise<object> {
    const timed = this.metrics?.startUpstreamTimer(check);
    try {
      const answer = await CHECKS[check].ask(this.provider, e164, lane);
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

function cacheKey(check: CheckName, e164: string): string {
  return `${CACHE_KEY_VERSION}:${check}:${e164}`;
}

/** Whether a cached answer may serve a caller with this age bound (undefined: any within its TTL). */
function youngEnough(cached: CachedAnswer, maxAgeSeconds: number | undefined): boolean {
  return maxAgeSeconds === undefined || Date.now() - cached.storedAt <= maxAgeSeconds * 1000;
}
