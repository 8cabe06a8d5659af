import { ConnectionStatus } from '../lookup.types';

/**
 * The test-number table (docs/api.md), shared by the sandbox adapter and the upstream simulator
 * so that both answer the same way. It applies to numbers that are valid for their numbering plan,
 * keyed by the last four digits.
 */
export type TestNumberRule =
  | { kind: 'answer'; status: ConnectionStatus; isPorted: boolean }
  /** The upstream fails (the simulator answers 5xx, the sandbox throws ProviderUnavailableError). */
  | { kind: 'failure' }
  /** The upstream answers only after `delayMs`, longer than any sensible timeout. */
  | { kind: 'slow'; delayMs: number; status: ConnectionStatus; isPorted: boolean }
  /**
   * Changes at each live lookup (never from the cache): `status` alternates CONNECTED (first lookup),
   * ABSENT, CONNECTED...; `operator` alternates the original carrier (first lookup) and another one.
   * They make a fresh answer visible (Cache-Control on /filter, watchlists).
   */
  | { kind: 'alternating'; changes: 'status' | 'operator' };

export const SLOW_ANSWER_DELAY_MS = 10_000;

export const TEST_NUMBER_RULES: Readonly<Record<string, TestNumberRule>> = {
  '0000': { kind: 'answer', status: 'ABSENT', isPorted: false },
  '0001': { kind: 'answer', status: 'UNDETERMINED', isPorted: false },
  '0002': { kind: 'answer', status: 'CONNECTED', isPorted: true },
  '0003': { kind: 'failure' },
  '0004': { kind: 'slow', delayMs: SLOW_ANSWER_DELAY_MS, status: 'CONNECTED', isPorted: false },
  '0005': { kind: 'alternating', changes: 'status' },
  '0006': { kind: 'alternating', changes: 'operator' },
};

/**
 * Counts the live lookups of each alternating number (per process, per check): the sandbox and the
 * simulator each keep one. `next` answers true on odd lookups after the first (the "other" state).
 */
export class Alternation {
  private readonly counts = new Map<string, number>();

  next(key: string): boolean {
    const count = this.counts.get(key) ?? 0;
    this.counts.set(key, count + 1);
    return count % 2 === 1;
  }
}

/**
 * What an alternating number answers now: its status and whether its operator is the other one.
 * Advances that number's count for the check asking.
 */
export function alternatingAnswer(
  rule: Extract<TestNumberRule, { kind: 'alternating' }>,
  alternation: Alternation,
  key: string,
): { status: ConnectionStatus; otherOperator: boolean } {
  const flipped = alternation.next(key);
  return { status: rule.changes === 'status' && flipped ? 'ABSENT' : 'CONNECTED', otherOperator: rule.changes === 'operator' && flipped };
}

const DEFAULT_RULE: TestNumberRule = { kind: 'answer', status: 'CONNECTED', isPorted: false };

/** The rule for a number (E.164 or bare digits) that is valid for its numbering plan. */
export function testNumberRule(number: string): TestNumberRule {
  return TEST_NUMBER_RULES[number.slice(-4)] ?? DEFAULT_RULE;
}

/**
 * Operators a ported test number (ending 0002) is said to have moved to, by region. The simulated
 * current carrier is the first one that differs from the number's original carrier.
 */
const PORTED_TO_BY_REGION: Readonly<Record<string, readonly string[]>> = {
  US: ['T-Mobile USA', 'AT&T', 'Verizon Wireless'],
  CA: ['Rogers', 'Bell', 'Telus'],
  GB: ['EE', 'Vodafone', 'O2'],
  DE: ['Vodafone', 'Telefonica', 'T-Mobile'],
  FR: ['Orange', 'Bouygues', 'Free Mobile'],
  ES: ['Movistar', 'Vodafone', 'Orange'],
  IT: ['TIM', 'Vodafone', 'WindTre'],
  NL: ['KPN', 'Vodafone', 'Odido'],
};
const PORTED_TO_FALLBACK = ['Simulated Ported Operator', 'Simulated Other Operator'];

/** A current operator different from `originalCarrier` (deterministic for a region). */
export function portedCarrier(region: string | null, originalCarrier: string | null): string {
  const candidates = [...(region ? (PORTED_TO_BY_REGION[region] ?? []) : []), ...PORTED_TO_FALLBACK];
  return candidates.find((name) => name.toLowerCase() !== originalCarrier?.toLowerCase()) ?? PORTED_TO_FALLBACK[0];
}
