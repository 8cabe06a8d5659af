import { Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { Clock, SystemClock } from '../../common/clock';
import type { CheckAnswer, CheckOptionValues } from '../../checks/check-definition';
import { Lane, LookupProvider, notOffered, Upstream } from '../port/lookup-provider';
import { UpstreamFailure, ProviderUnavailableError } from '../port/upstream-failure';
import { isUpstreamUnhealthy } from '../resilience/unhealthy';
import { NO_ROUTING, routeFor, RoutingRules } from './routing';
import { callDeadline } from '../resilience/call-deadline';
import { DEFAULT_DEMOTION, DemotionOptions, HealthWindow } from './health-window';
import type { RecentHealth } from '../port/lookup-provider';
import { attemptFailureReason, attemptReachedUpstream } from '../port/provider-attempts';

/** One upstream behind the failover: its port (an adapter) and the one Upstream it reports. */
export interface FailoverMember {
  provider: LookupProvider;
  upstream: Upstream;
}

/**
 * Several upstreams behind one port. Each check of a number goes to the providers that offer the check
 * (their adapter's descriptor: a provider that does not is never asked, and nothing is counted for it)
 * and that LOOKUP_ROUTING allows for it, in its order (routing.ts: per check, per calling code, the residency allow-list), healthy
 * first: a provider whose breaker is open for the lane is asked all the same, and its breaker refuses
 * without a request until the half-open trial is due (only cockatiel's execute() moves Open → HalfOpen);
 * one whose recent attempts on the lane failed for its health or were slow (health-window.ts, LOOKUP_DEMOTE_*) is
 * demoted: asked after the healthy ones, never skipped. Within each group the route's order stands, so
 * LOOKUP_PROVIDERS' equals stay cheapest first (`a|b`, `<ID>_PRICE`). A refundable failure (timeout, connection error,
 * 5xx, 429, an answer that fails validation, no coverage) moves the check
 * to the next, while the check's LOOKUP_CALL_BUDGET_MS lasts (once spent, the rest are not asked and
 * the attempt under way ends with it: resilience/call-deadline.ts). Only when every allowed provider failed does the check fail (the caller's 503,
 * refunded). The customer's charge is the caller's business and happens once, whatever the attempts.
 */
export class FailoverProvider extends LookupProvider implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('FailoverProvider');
  /** Checks moved on from each provider id (a failure there, or its breaker open), for /metrics. */
  private readonly movedOn = new Map<string, number>();

  /** Per provider id and lane: the recent attempts that reached the upstream (failed for its health or not, how long). */
  private readonly recent: HealthWindow;
  private readonly byId: ReadonlyMap<string, FailoverMember>;

  constructor(
    private readonly members: readonly FailoverMember[],
    private readonly rules: RoutingRules = NO_ROUTING,
    /** LOOKUP_CALL_BUDGET_MS: the time one check may take over all its providers and attempts. */
    private readonly budgetMs = Infinity,
    demotion: DemotionOptions = DEFAULT_DEMOTION,
    /** The time of the health window, of the attempts' durations and of the call budget (the injected Clock). */
    private readonly clock: Clock = new SystemClock(),
  ) {
    super();
    this.recent = new HealthWindow(demotion, clock);
    this.byId = new Map(members.map((member) => [member.upstream.provider, member]));
  }

  upstreams(): readonly Upstream[] {
    return this.members.map((member) => member.upstream);
  }

  /** Nest calls the hooks of the registered port only: the members' (the sandbox's warning, closing pools) are passed on. */
  onApplicationBootstrap(): void {
    for (const { provider } of this.members) (provider as Partial<OnApplicationBootstrap>).onApplicationBootstrap?.();
  }

  onModuleDestroy(): void {
    for (const { provider } of this.members) (provider as Partial<OnModuleDestroy>).onModuleDestroy?.();
  }

  override failovers(): ReadonlyMap<string, number> {
    return this.movedOn;
  }

  /** Whether any member offers the check. */
  offers(check: string): boolean {
    return this.members.some((member) => member.provider.offers(check));
  }

  /** One check, from the first provider offering it that its route allows and that answers it (the record names which one did). */
  async answer(check: string, e164: string, lane: Lane = 'interactive', options?: CheckOptionValues): Promise<CheckAnswer> {
    const failures: string[] = [];
    if (!this.offers(check)) throw notOffered('no configured lookup provider', check);
    const candidates = this.candidates(check, e164, lane);
    if (candidates.length === 0) {
      throw new UpstreamFailure('no lookup provider is allowed for this number (LOOKUP_ROUTING residency)', 'upstream_error', 'no_provider_allowed');
    }
    let last: ProviderUnavailableError | undefined;
    const deadline = this.clock.now() + this.budgetMs;
    for (const { provider, upstream } of candidates) {
      if (this.clock.now() >= deadline) {
        failures.push(`${upstream.provider}: not asked, call budget spent`);
        continue;
      }
      // No pre-filter on an open breaker: it rejects without a request (circuit_open, the move-on case
      // below), and only its execute() moves Open → HalfOpen, so a recovered provider gets its trial.
      const started = this.clock.now();
      try {
        const answer = await callDeadline.run(deadline, () => provider.answer(check, e164, lane, options));
        this.recent.note(key(upstream.provider, lane), false, this.clock.now() - started);
        return answer;
      } catch (error) {
        if (!(error instanceof ProviderUnavailableError)) throw error;
        // A refusal without a request (its open breaker, a 429 hold) says nothing new about its health: not an outcome.
        if (attemptReachedUpstream(attemptFailureReason(error))) {
          this.recent.note(key(upstream.provider, lane), isUpstreamUnhealthy(error), this.clock.now() - started);
        }
        failures.push(`${upstream.provider}: ${error.reason}`);
        last = error;
        this.count(upstream.provider);
      }
    }
    if (candidates.length > 1) this.logger.warn(`every provider failed for ${check} (${failures.join('; ')})`);
    throw last ?? new ProviderUnavailableError('no lookup provider configured', 'upstream_error');
  }

  /** The providers to ask, in order: those offering the check, as the route orders and allows them, the demoted ones last. */
  candidates(check: string, e164: string, lane: Lane): FailoverMember[] {
    const offering = this.members.filter((member) => member.provider.offers(check)).map((member) => member.upstream.provider);
    const route = routeFor(this.rules, offering, check, e164).map((id) => this.byId.get(id)!);
    const demoted = route.filter((member) => this.demoted(member.upstream.provider, lane));
    return [...route.filter((member) => !demoted.includes(member)), ...demoted];
  }

  /** What the recent attempts say about a provider on a lane (for /health/ready). */
  override recentHealth(provider: string, lane: Lane): RecentHealth | undefined {
    return this.byId.has(provider) ? this.recent.status(key(provider, lane)) : undefined;
  }

  private demoted(provider: string, lane: Lane): boolean {
    return this.recent.askLast(key(provider, lane));
  }

  private count(provider: string): void {
    this.movedOn.set(provider, (this.movedOn.get(provider) ?? 0) + 1);
  }
}

function key(provider: string, lane: Lane): string {
  return `${provider} ${lane}`;
}
