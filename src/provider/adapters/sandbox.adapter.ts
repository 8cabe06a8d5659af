import { Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { CheckAnswer } from '../../checks/check-definition';
import { Clock, SystemClock } from '../../common/clock';
import { answeredNow, Lane, LookupProvider, unknownCheck, Upstream } from '../port/lookup-provider';
import { ProviderUnavailableError } from '../port/upstream-failure';
import { describeNumber, originalCarrier } from '../numbering/numbering-plan';
import { portedCarrier, statusOf, TestNumberRule, TestNumberTable } from './test-numbers';
import { ProviderAttempts } from '../port/provider-attempts';

type NetworkRule = Exclude<TestNumberRule, { kind: 'failure' }>;

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
  answer(check: string, e164: string, _lane?: Lane): Promise<CheckAnswer> {
    return this.attempts.time(check, () => this.record(check, e164));
  }

  private async record(check: string, e164: string): Promise<CheckAnswer> {
    switch (check) {
      case 'network_status': {
        const rule = await this.networkRule(e164, check);
        // A number assigned to no subscriber has no operator serving it (as hlr-lookups' INVALID_MSISDN answers).
        const carrier = rule && rule.situation !== 'not_assigned' ? await this.currentCarrier(e164, rule.isPorted) : null;
        return answeredNow(check, this.provider, { status: rule ? statusOf(rule) : 'ABSENT', carrier, status_reason: rule?.situation ?? null, mcc: null, mnc: null }, this.clock.date());
      }
      case 'line_type':
        await this.networkRule(e164, check);
        return answeredNow(check, this.provider, { line_type: describeNumber(e164).lineType }, this.clock.date());
      case 'portability': {
        const rule = await this.networkRule(e164, check);
        const carrier = rule ? await this.currentCarrier(e164, rule.isPorted) : null;
        return answeredNow(check, this.provider, { is_ported: rule?.isPorted ?? false, carrier, mcc: null, mnc: null }, this.clock.date());
      }
      default:
        throw unknownCheck(this.provider, check);
    }
  }

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
