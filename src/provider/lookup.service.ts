import { Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { Clock } from '../common/clock';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import type { CheckAdapter, CheckAnswer, CheckOptions, CheckOptionValues } from '../checks/check-definition';
import { optionValuesKey, optionValuesOf, sameOptionValues } from '../checks/check-options';
import { CheckRegistry, NumberReport } from '../checks/check-registry';
import type { EnabledChecks } from '../checks/checks';
import { Metrics } from '../metrics/metrics';
import { LookupCacheStore } from './cache/lookup-cache.store';
import { Lane, LookupProvider, notOffered } from './port/lookup-provider';
import { ProviderUnavailableError } from './port/upstream-failure';
import { describeNumber, type NumberDescription } from './numbering/numbering-plan';

export type { NumberDescription } from './numbering/numbering-plan';
import { SingleFlight } from './cache/single-flight';
import { cacheKey, erasedKey } from './cache/cache-keys';
import { HashKey, keyedHash } from '../common/keyed-hash';
import { maskPhone } from '../common/phone';

type FailureReason = ProviderUnavailableError['reason'];
export type LookupOutcome = 'ok' | FailureReason;

/** Plain counters, cheap to read, that ProviderMetrics reports to /metrics at scrape time. */
export interface LookupCounters {
  cache: { hits: number; misses: number; storeErrors: number; store: 'memory' | 'redis' };
  /** Provider calls (cache misses that reached the adapter), by check and outcome. */
  lookups: Record<string, Record<LookupOutcome, number>>;
  /** Callers that joined an identical lookup already in flight instead of starting their own. */
  singleFlightShared: number;
}

const OUTCOMES: readonly LookupOutcome[] = ['ok', 'timeout', 'network', 'upstream_error', 'circuit_open', 'unauthorized'];

/**
 * A cached answer and when it was looked up (the Clock's epoch ms), so that a caller can ask for a
 * fresher one; for a check with options, the values it was asked with (it serves only the same ones).
 */
interface CachedAnswer {
  answer: CheckAnswer;
  storedAt: number;
  options?: CheckOptionValues;
}

/** Full records of some checks of one number, by check name. */
export type CheckAnswers = Readonly<Record<string, CheckAnswer>>;

/** How a lookup is asked: the checks already known (from the cache), the lane (see Lane), the age bound. */
export interface LookupOptions {
  known?: CheckAnswers;
  lane?: Lane;
  /**
   * A cached answer older than this is not used: the number is looked up again and the cache
   * refreshed with the new answer. 0 = live (never from the cache: watchlist rounds,
   * `Cache-Control: no-cache`); undefined = any answer still within its TTL.
   */
  maxAgeSeconds?: number;
  /**
   * The account's option values of the checks that declare options (SettingsService's AccountChecks):
   * the adapter is asked with them, and a cached answer serves only a lookup with the same values.
   * A check left out is asked with its defaults.
   */
  checkOptions?: CheckOptions;
}

/**
 * Looks numbers up, without billing. One verb per meaning: `lookUp` gives a number's report (the
 * numbering plan, then each enabled check from the cache when fresh, else from its adapter);
 * `lookUpCached` gives it only when the cache alone can; a check is *answered* (cache, else one
 * upstream call per number and check at a time, however many callers ask, then cached with the
 * check's own TTL) and its adapter *asked*. Failures are never cached. Reports are full records:
 * callers project them (CheckRegistry.toPhoneAnswer for /filter).
 */
@Injectable()
export class LookupService implements OnApplicationBootstrap {
  private readonly logger = new Logger(LookupService.name);
  private readonly flights = new SingleFlight();
  private readonly hashKey: HashKey;
  private hits = 0;
  private misses = 0;
  private shared = 0;
  private readonly outcomes: Record<string, Record<LookupOutcome, number>>;

  constructor(
    private readonly provider: LookupProvider,
    private readonly store: LookupCacheStore,
    private readonly registry: CheckRegistry,
    config: AppConfig,
    private readonly clock: Clock,
    @Optional() private readonly metrics?: Metrics,
  ) {
    this.outcomes = Object.fromEntries(
      registry.names().map((check) => [check, Object.fromEntries(OUTCOMES.map((outcome) => [outcome, 0])) as Record<LookupOutcome, number>]),
    );
    this.hashKey = config.dataHashKey;
  }

  /** One line at start-up when a registered check has no adapter to answer it (settings refuse to turn it on). */
  onApplicationBootstrap(): void {
    const unanswered = this.registry.names().filter((check) => this.adapterOf(check) === undefined);
    if (unanswered.length === 0) return;
    const providers = this.provider.upstreams().map((upstream) => upstream.provider).join(', ');
    this.logger.warn(
      `No configured lookup provider (${providers}) offers the check${unanswered.length > 1 ? 's' : ''} ${unanswered.join(', ')}: turning ${unanswered.length > 1 ? 'them' : 'it'} on is refused (400), and an account that has ${unanswered.length > 1 ? 'one' : 'it'} on gets 503 PROVIDER_UNAVAILABLE for ${unanswered.length > 1 ? 'them' : 'it'}, refunded.`,
    );
  }

  /** Who answers a check: the adapter registered with it, else the configured provider when it offers it; undefined: nobody. */
  private adapterOf(check: string): CheckAdapter | undefined {
    return this.registry.adapterOf(check) ?? (this.provider.offers(check) ? this.provider : undefined);
  }

  /** The number itself never reaches the store: a SCAN of Redis lists hashes, not numbers (one hash a call, see cacheKey). */
  private numberHash(e164: string): string {
    return keyedHash(this.hashKey, e164);
  }

  /**
   * The report of one number: the numbering plan (free), then the enabled checks for a number valid for
   * its plan (those `known` are not asked again). Throws AppError PROVIDER_UNAVAILABLE when any enabled
   * check could not be answered (answers that did arrive are still cached for the next call).
   */
  async lookUp(e164: string, checks: EnabledChecks, options: LookupOptions = {}): Promise<NumberReport> {
    const { region, validForPlan } = describeNumber(e164);
    const answers = validForPlan ? await this.answerChecks(e164, checks, options) : {};
    return { region, validForPlan, checks, answers };
  }

  /**
   * The report when it is known without asking any adapter — a number invalid for its plan, or every
   * enabled check in the cache within the age bound — so that a call can be charged settled, final at
   * once. Otherwise `report` is undefined and `known` holds the checks the cache had, for `lookUp`.
   */
  async lookUpCached(
    e164: string,
    checks: EnabledChecks,
    { maxAgeSeconds, checkOptions }: Pick<LookupOptions, 'maxAgeSeconds' | 'checkOptions'> = {},
  ): Promise<{ report?: NumberReport; known: CheckAnswers }> {
    const { region, validForPlan } = describeNumber(e164);
    if (!validForPlan) return { report: { region, validForPlan, checks, answers: {} }, known: {} };
    const enabled = this.registry.enabled(checks).map((check) => check.name);
    if (maxAgeSeconds === 0 && enabled.length > 0) return { known: {} }; // no-cache: nothing to read
    const hash = this.numberHash(e164);
    const found = await Promise.all(
      enabled.map(async (check) => {
        const cached = await this.store.get<CachedAnswer>(cacheKey(check, hash));
        return cached !== undefined && youngEnough(cached, maxAgeSeconds, this.clock.now()) && sameOptionValues(cached.options, this.optionsOf(check, checkOptions))
          ? cached.answer
          : undefined;
      }),
    );
    const known: Record<string, CheckAnswer> = {};
    found.forEach((answer, index) => {
      if (answer !== undefined) known[enabled[index]] = answer;
    });
    const hits = Object.keys(known).length;
    this.hits += hits;
    return { report: hits === enabled.length ? { region, validForPlan, checks, answers: known } : undefined, known };
  }

  /** What the numbering plan alone says of a number (region, validity, type): free, offline, never a provider. */
  describe(e164: string): NumberDescription {
    return describeNumber(e164);
  }

  /**
   * The answers the cache holds for these checks now, whichever account's lookup put them there and
   * whatever the caller has enabled: never asks a provider, never counted as a hit or a miss (the risk
   * verdict reads what is already known). Names of checks not registered are skipped.
   */
  async cachedAnswers(e164: string, checks: readonly string[]): Promise<CheckAnswers> {
    const known = checks.filter((check) => this.registry.has(check));
    if (known.length === 0) return {};
    const hash = this.numberHash(e164);
    // One round trip for them all (the risk verdict reads three records of a number it has never seen).
    const found = await this.store.getMany<CachedAnswer>(known.map((check) => cacheKey(check, hash)));
    const answers: Record<string, CheckAnswer> = {};
    found.forEach((cached, index) => {
      if (cached !== undefined) answers[known[index]] = cached.answer;
    });
    return answers;
  }

  /** A check's option values for a lookup: the caller's, else the definition's defaults ({} for a check without options). */
  private optionsOf(check: string, checkOptions: CheckOptions | undefined): CheckOptionValues {
    return checkOptions?.[check] ?? optionValuesOf(this.registry.get(check), undefined);
  }

  get counters(): LookupCounters {
    return {
      cache: { hits: this.hits, misses: this.misses, storeErrors: this.store.errors, store: this.store.kind },
      lookups: structuredClone(this.outcomes),
      singleFlightShared: this.shared,
    };
  }

  /** The enabled checks' records, answered in parallel (those in `known` are not answered again). */
  private async answerChecks(e164: string, checks: EnabledChecks, { known = {}, lane = 'interactive', maxAgeSeconds, checkOptions }: LookupOptions): Promise<CheckAnswers> {
    const enabled = this.registry.enabled(checks).map((check) => check.name).filter((check) => known[check] === undefined);
    const hash = this.numberHash(e164);
    const settled = await Promise.allSettled(enabled.map((check) => this.answer(check, e164, hash, lane, maxAgeSeconds, this.optionsOf(check, checkOptions))));
    const answers: Record<string, CheckAnswer> = { ...known };
    const failures: string[] = [];
    settled.forEach((result, index) => {
      const check = enabled[index];
      if (result.status === 'fulfilled') {
        answers[check] = result.value;
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

  /**
   * One check's record, from the cache or its adapter. One flight per lane: a batch lookup's failure
   * (its own breaker) is never handed to a live call. Callers with a bound on the age join only flights
   * with the same bound (a live caller never gets an answer read from the cache by another caller's flight).
   */
  private answer(check: string, e164: string, hash: string, lane: Lane, maxAgeSeconds: number | undefined, options: CheckOptionValues): Promise<CheckAnswer> {
    const key = cacheKey(check, hash);
    const asked = optionValuesKey(options);
    const flightKey = `${lane}:${key}${maxAgeSeconds === undefined ? '' : `:max-age=${maxAgeSeconds}`}${asked ? `:${asked}` : ''}`;
    const flight = this.flights.run(flightKey, async () => {
      const cached = maxAgeSeconds === 0 ? undefined : await this.store.get<CachedAnswer>(key);
      if (cached !== undefined && youngEnough(cached, maxAgeSeconds, this.clock.now()) && sameOptionValues(cached.options, options)) {
        this.hits += 1;
        return cached.answer;
      }
      this.misses += 1;
      const fresh = await this.ask(check, e164, lane, options);
      // One entry per number and check (erasure knows every key): an answer asked with other option
      // values replaces it, and serves only lookups with those values.
      const entry: CachedAnswer = asked ? { answer: fresh, storedAt: this.clock.now(), options } : { answer: fresh, storedAt: this.clock.now() };
      await this.store.set(key, entry, this.registry.cacheTtlSeconds(check), erasedKey(hash));
      return fresh;
    });
    if (flight.shared) this.shared += 1;
    return flight.promise;
  }

  /** The adapter's answer: the one registered with the check, else the configured provider's; a refusal without asking anyone when nobody offers it. */
  private async ask(check: string, e164: string, lane: Lane, options: CheckOptionValues): Promise<CheckAnswer> {
    const adapter = this.adapterOf(check);
    // Not a provider call: neither timed nor counted as one.
    if (adapter === undefined) throw notOffered('no configured lookup provider', check);
    const timed = this.metrics?.startUpstreamTimer(check);
    try {
      const answer = await adapter.answer(check, e164, lane, options);
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

/** Whether a cached answer may serve a caller with this age bound at `now` (undefined: any within its TTL). */
function youngEnough(cached: CachedAnswer, maxAgeSeconds: number | undefined, now: number): boolean {
  return maxAgeSeconds === undefined || now - cached.storedAt <= maxAgeSeconds * 1000;
}
