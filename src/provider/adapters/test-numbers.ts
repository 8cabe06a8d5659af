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
  | { kind: 'slow'; delayMs: number; status: ConnectionStatus; isPorted: boolean };

export const SLOW_ANSWER_DELAY_MS = 10_000;

export const TEST_NUMBER_RULES: Readonly<Record<string, TestNumberRule>> = {
  '0000': { kind: 'answer', status: 'ABSENT', isPorted: false },
  '0001': { kind: 'answer', status: 'UNDETERMINED', isPorted: false },
  '0002': { kind: 'answer', status: 'CONNECTED', isPorted: true },
  '0003': { kind: 'failure' },
  '0004': { kind: 'slow', delayMs: SLOW_ANSWER_DELAY_MS, status: 'CONNECTED', isPorted: false },
};

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
