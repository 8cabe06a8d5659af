import { Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { CheckAnswer } from '../checks/check-definition';
import { Lane, LookupProvider, ProviderUnavailableError, Upstream } from './lookup-provider';
import { isUpstreamUnhealthy, UpstreamFailure } from './resilience/upstream-failure';
import { NO_ROUTING, routeFor, RoutingRules } from './routing';
import { callDeadline } from './resilience/call-deadline';

/** Recent outcomes kept per provider and lane, and the share of upstream failures among them that demotes it. */
const RECENT_OUTCOMES = 20;
const DEMOTE_MIN_OUTCOMES = 10;
const DEMOTE_FAILURE_RATE = 0.5;

/** One upstream behind the failover: its port (an adapter) and the one Upstream it reports. */
export interface FailoverMember {
  provider: LookupProvider;
  upstream: Upstream;
}

/**
 * Several upstreams behind one port. Each check of a number goes to the providers LOOKUP_ROUTING allows
 * for it, in its order (routing.ts: per check, per calling code, the residency allow-list), healthy
 * first: a provider whose breaker is open for the lane is asked all the same, and its breaker refuses
 * without a request until the half-open trial is due (only cockatiel's execute() moves Open → HalfOpen);
 * one whose recent calls mostly failed for its health is asked last. A refundable failure (timeout, connection error,
 * 5xx, 429, an answer that fails validation, no coverage, a check it does not offer) moves the check
 * to the next, while the check's LOOKUP_CALL_BUDGET_MS lasts (once spent, the rest are not asked and
 * the attempt under way ends with it: resilience/call-deadline.ts). Only when every allowed provider failed does the check fail (the caller's 503,
 * refunded). The customer's charge is the caller's business and happens once, whatever the attempts.
 */
export class FailoverProvider extends LookupProvider implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('FailoverProvider');
  /** Checks moved on from each provider id (a failure there, or its breaker open), for /metrics. */
  private readonly movedOn = new Map<string, number>();

  /** Per provider id and lane: recent outcomes, true for a failure of the upstream's health. */
  private readonly recent = new Map<string, boolean[]>();
  private readonly byId: ReadonlyMap<string, FailoverMember>;

  constructor(
    private readonly members: readonly FailoverMember[],
    private readonly rules: RoutingRules = NO_ROUTING,
    /** LOOKUP_CALL_BUDGET_MS: the time one check may take over all its providers and attempts. */
    private readonly budgetMs = Infinity,
  ) {
    super();
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

  /** One check, from the first provider its route allows that answers it (the record names which one did). */
  async answer(check: string, e164: string, lane: Lane = 'interactive'): Promise<CheckAnswer> {
    const failures: string[] = [];
    const candidates = this.candidates(check, e164, lane);
    if (candidates.length === 0) {
      throw new UpstreamFailure('no lookup provider is allowed for this number (LOOKUP_ROUTING residency)', 'upstream_error', 'no_provider_allowed');
    }
    let last: ProviderUnavailableError | undefined;
    const deadline = Date.now() + this.budgetMs;
    for (const { provider, upstream } of candidates) {
      if (Date.now() >= deadline) {
        failures.push(`${upstream.provider}: not asked, call budget spent`);
        continue;
      }
      // No pre-filter on an open breaker: it rejects without a request (circuit_open, the move-on case
      // below), and only its execute() moves Open → HalfOpen, so a recovered provider gets its trial.
      try {
        const answer = await callDeadline.run(deadline, () => provider.answer(check, e164, lane));
        this.note(upstream.provider, lane, false);
        return answer;
      } catch (error) {
        if (!(error instanceof ProviderUnavailableError)) throw error;
        // A refusal by its open breaker says nothing new about its health: not an outcome.
        if (error.reason !== 'circuit_open') this.note(upstream.provider, lane, isUpstreamUnhealthy(error));
        failures.push(`${upstream.provider}: ${error.reason}`);
        last = error;
        this.count(upstream.provider);
      }
    }
    if (candidates.length > 1) this.logger.warn(`every provider failed for ${check} (${failures.join('; ')})`);
    throw last ?? new ProviderUnavailableError('no lookup provider configured', 'upstream_error');
  }

  /** The providers to ask, in order: the route, the demoted ones last. */
  candidates(check: string, e164: string, lane: Lane): FailoverMember[] {
    const route = routeFor(this.rules, [...this.byId.keys()], check, e164).map((id) => this.byId.get(id)!);
    const demoted = route.filter((member) => this.demoted(member.upstream.provider, lane));
    return [...route.filter((member) => !demoted.includes(member)), ...demoted];
  }

  private note(provider: string, lane: Lane, failed: boolean): void {
    const key = `${provider} ${lane}`;
    const outcomes = this.recent.get(key) ?? [];
    outcomes.push(failed);
    if (outcomes.length > RECENT_OUTCOMES) outcomes.shift();
    this.recent.set(key, outcomes);
  }

  /** Most of its recent calls on this lane failed for its health: asked after the others. */
  private demoted(provider: string, lane: Lane): boolean {
    const outcomes = this.recent.get(`${provider} ${lane}`) ?? [];
    if (outcomes.length < DEMOTE_MIN_OUTCOMES) return false;
    return outcomes.filter(Boolean).length / outcomes.length >= DEMOTE_FAILURE_RATE;
  }

  private count(provider: string): void {
    this.movedOn.set(provider, (this.movedOn.get(provider) ?? 0) + 1);
  }
}
