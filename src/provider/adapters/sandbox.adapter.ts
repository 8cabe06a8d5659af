import { Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { CheckAnswer, CheckOptionValues, FieldValue } from '../../checks/check-definition';
import { upstreamAdapter, type ChecksOf } from '../../config/upstream-adapters';
import { Clock, SystemClock } from '../../common/clock';
import { answeredNow, Lane, LookupProvider, notOffered, Upstream } from '../port/lookup-provider';
import { ProviderUnavailableError } from '../port/upstream-failure';
import { describeNumber, originalCarrier } from '../numbering/numbering-plan';
import { portedCarrier, simSwapHoursAgo, statusOf, TestNumberRule, TestNumberTable } from './test-numbers';
import { simSwapFields, windowHoursOf } from './sim-swap-fields';
import { ProviderAttempts } from '../port/provider-attempts';

type NetworkRule = Exclude<TestNumberRule, { kind: 'failure' }>;

const SANDBOX_CHECKS = upstreamAdapter('sandbox').checks;

/**
 * In-process, deterministic answers for development, demos and tests: numbering-plan facts from
 * libphonenumber, network answers from the test-number table. It honours the configured timeout so
 * that the slow test number ends as a timeout after PROVIDER_TIMEOUT_MS, like the real adapter.
 */
export class SandboxAdapter extends LookupProvider implements Upstream, OnApplicationBootstrap {
  readonly provider: string;
  readonly simulated = true;
  private readonly logger = new Logger('LookupProvider');
  private readonly testNumbers = new TestNumberTable();
  /** Every answer() by check and how it ended, like a real upstream's (per-provider metrics). */
  readonly attempts = new ProviderAttempts();

  constructor(
    private readonly timeoutMs: number,
    /** The provider id (LOOKUP_PROVIDERS may name a sandbox anything). */
    provider = 'sandbox',
    /** The time of its answers and of its delays (the injected Clock: a test moves a slow number's delay on). */
    private readonly clock: Clock = new SystemClock(),
  ) {
    super();
    this.provider = provider;
  }

  onApplicationBootstrap(): void {
    this.logger.warn(`Provider ${this.provider} (adapter sandbox): lookup results are SIMULATED (the test-number table of docs/api.md), not from a real network.`);
  }

  /** One check's record: the status reason is the test number's situation (its own vocabulary); no network codes (null). */
  answer(check: string, e164: string, _lane?: Lane, options: CheckOptionValues = {}): Promise<CheckAnswer> {
    return this.attempts.time(check, async () => {
      if (!this.offers(check)) throw notOffered(`provider ${this.provider}`, check);
      const fields = await this.answers[check as ChecksOf<'sandbox'>](e164, check, options);
      return answeredNow(check, this.provider, fields, this.clock.date());
    });
  }

  offers(check: string): boolean {
    return (SANDBOX_CHECKS as readonly string[]).includes(check);
  }

  /** One answer per check it offers (the descriptor's list: the compiler holds the two together). */
  private readonly answers: Record<ChecksOf<'sandbox'>, (e164: string, check: string, options: CheckOptionValues) => Promise<Record<string, FieldValue>>> = {
    network_status: async (e164, check) => {
      const rule = await this.networkRule(e164, check);
      // A number assigned to no subscriber has no operator serving it (as hlr-lookups' INVALID_MSISDN answers).
      const carrier = rule && rule.situation !== 'not_assigned' ? await this.currentCarrier(e164, rule.isPorted) : null;
      return { status: rule ? statusOf(rule) : 'ABSENT', carrier, status_reason: rule?.situation ?? null, mcc: null, mnc: null };
    },
    line_type: async (e164, check) => {
      await this.networkRule(e164, check);
      return { line_type: describeNumber(e164).lineType };
    },
    portability: async (e164, check) => {
      const rule = await this.networkRule(e164, check);
      const carrier = rule ? await this.currentCarrier(e164, rule.isPorted) : null;
      return { is_ported: rule?.isPorted ?? false, carrier, mcc: null, mnc: null };
    },
    sim_swap: async (e164, check, options) => {
      await this.networkRule(e164, check);
      const now = this.clock.date();
      return simSwapFields({ lastChangeAt: new Date(now.getTime() - simSwapHoursAgo(e164) * 3_600_000) }, now, windowHoursOf(options));
    },
  };

  async ping(): Promise<void> {}

  upstreams(): readonly Upstream[] {
    return [this];
  }

  /** No breaker: nothing to protect in-process answers from. */
  circuitState(): undefined {
    return undefined;
  }

  /** The table's rule for one lookup of a plan-valid number (null when not valid), after its failure or delay. */
  private async networkRule(e164: string, check: string): Promise<NetworkRule | null> {
    if (!describeNumber(e164).validForPlan) return null;
    const rule = this.testNumbers.rule(e164, check);
    if (rule.kind === 'failure') throw new ProviderUnavailableError('sandbox: simulated upstream failure', 'upstream_error');
    if (rule.kind === 'slow') {
      if (rule.delayMs > this.timeoutMs) {
        await this.clock.sleep(this.timeoutMs);
        throw new ProviderUnavailableError(`sandbox: no answer within ${this.timeoutMs} ms`, 'timeout');
      }
      await this.clock.sleep(rule.delayMs);
    }
    return rule;
  }

  private async currentCarrier(e164: string, isPorted: boolean): Promise<string | null> {
    const original = await originalCarrier(e164);
    return isPorted ? portedCarrier(describeNumber(e164).region, original) : original;
  }
}
