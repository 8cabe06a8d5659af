import { Logger, OnApplicationBootstrap } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { LookupProvider, ProviderUnavailableError } from '../lookup-provider';
import { NetworkStatusAnswer, NumberTypeAnswer, PortabilityAnswer } from '../lookup.types';
import { describeNumber, originalCarrier } from '../numbering-plan';
import { CheckName } from '../../checks/checks';
import { portedCarrier, TestNumberRule, TestNumberTable } from './test-numbers';

type NetworkRule = Exclude<TestNumberRule, { kind: 'failure' }>;

/**
 * In-process, deterministic answers for development, demos and tests: numbering-plan facts from
 * libphonenumber, network answers from the test-number table. It honours the configured timeout so
 * that the slow test number ends as a timeout after PROVIDER_TIMEOUT_MS, like the real adapter.
 */
export class SandboxAdapter extends LookupProvider implements OnApplicationBootstrap {
  readonly name = 'sandbox';
  readonly simulated = true;
  private readonly logger = new Logger('LookupProvider');
  private readonly testNumbers = new TestNumberTable();

  constructor(private readonly timeoutMs: number) {
    super();
  }

  onApplicationBootstrap(): void {
    this.logger.warn('PROVIDER=sandbox: lookup results are SIMULATED (the test-number table of docs/api.md), not from a real network.');
  }

  async networkStatus(e164: string): Promise<NetworkStatusAnswer> {
    const rule = await this.networkRule(e164, 'network_status');
    if (!rule) return { status: 'ABSENT', carrier: null };
    return { status: rule.status, carrier: await this.currentCarrier(e164, rule.isPorted) };
  }

  async numberType(e164: string): Promise<NumberTypeAnswer> {
    await this.networkRule(e164, 'line_type');
    return { lineType: describeNumber(e164).lineType };
  }

  async portability(e164: string): Promise<PortabilityAnswer> {
    const rule = await this.networkRule(e164, 'portability');
    if (!rule) return { isPorted: false, carrier: null };
    return { isPorted: rule.isPorted, carrier: await this.currentCarrier(e164, rule.isPorted) };
  }

  async ping(): Promise<void> {}

  /** The table's rule for one lookup of a plan-valid number (null when not valid), after its failure or delay. */
  private async networkRule(e164: string, check: CheckName): Promise<NetworkRule | null> {
    if (!describeNumber(e164).validForPlan) return null;
    const rule = this.testNumbers.rule(e164, check);
    if (rule.kind === 'failure') throw new ProviderUnavailableError('sandbox: simulated upstream failure', 'upstream_error');
    if (rule.kind === 'slow') {
      if (rule.delayMs > this.timeoutMs) {
        await sleep(this.timeoutMs);
        throw new ProviderUnavailableError(`sandbox: no answer within ${this.timeoutMs} ms`, 'timeout');
      }
      await sleep(rule.delayMs);
    }
    return rule;
  }

  private async currentCarrier(e164: string, isPorted: boolean): Promise<string | null> {
    const original = await originalCarrier(e164);
    return isPorted ? portedCarrier(describeNumber(e164).region, original) : original;
  }
}
