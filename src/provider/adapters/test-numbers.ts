import { ConnectionStatus } from '../port/lookup.types';

/**
 * What the network says about a test number, in no provider's words: each simulator says it in its
 * own protocol's word (tools/*-simulator/), and each adapter maps that word back with its provider's
 * table (docs/api.md "One meaning, whichever provider answers"). The sandbox answers these directly.
 */
export const NETWORK_SITUATIONS = {
  /** The handset is attached to the network and reachable now. */
  reachable: 'CONNECTED',
  /** Assigned to a subscriber, but the handset is switched off or out of network reach. */
  switched_off: 'ABSENT',
  /** Not assigned to any subscriber on the network (not in service). */
  not_assigned: 'ABSENT',
  /** Assigned to a subscriber; whether the handset is reachable now is not known. */
  subscribed: 'UNDETERMINED',
  /** The network could not tell (no connectivity to the operator, or another error). */
  unknown: 'UNDETERMINED',
} as const satisfies Record<string, ConnectionStatus>;
export type NetworkSituation = keyof typeof NETWORK_SITUATIONS;

/**
 * The test-number table (docs/api.md), shared by the sandbox adapter and the simulators so that all
 * answer the same way. It applies to numbers that are valid for their numbering plan, keyed by the
 * last four digits.
 */
export type TestNumberRule =
  | { kind: 'answer'; situation: NetworkSituation; isPorted: boolean }
  /** The upstream fails (the simulators answer the failure of this number, the sandbox throws ProviderUnavailableError). */
  | { kind: 'failure' }
  /** The upstream answers only after `delayMs`, longer than any sensible timeout. */
  | { kind: 'slow'; delayMs: number; situation: NetworkSituation; isPorted: boolean };

/** The service's status for a rule that answers (the sandbox's vocabulary mapped, like every provider's). */
export function statusOf(rule: Exclude<TestNumberRule, { kind: 'failure' }>): ConnectionStatus {
  return NETWORK_SITUATIONS[rule.situation];
}

export const SLOW_ANSWER_DELAY_MS = 10_000;

export const TEST_NUMBER_RULES: Readonly<Record<string, TestNumberRule>> = {
  '0000': { kind: 'answer', situation: 'switched_off', isPorted: false },
  '0001': { kind: 'answer', situation: 'unknown', isPorted: false },
  '0002': { kind: 'answer', situation: 'reachable', isPorted: true },
  '0003': { kind: 'failure' },
  '0004': { kind: 'slow', delayMs: SLOW_ANSWER_DELAY_MS, situation: 'reachable', isPorted: false },
  '0008': { kind: 'answer', situation: 'subscribed', isPorted: false },
  '0009': { kind: 'answer', situation: 'not_assigned', isPorted: false },
};

const DEFAULT_RULE: TestNumberRule = { kind: 'answer', situation: 'reachable', isPorted: false };

/** The rule for a number (E.164 or bare digits) that is valid for its numbering plan, at its first lookup. */
export function testNumberRule(number: string): TestNumberRule {
  return ALTERNATING_RULES[number.slice(-4)]?.[0] ?? TEST_NUMBER_RULES[number.slice(-4)] ?? DEFAULT_RULE;
}

/**
 * Numbers whose answer changes at each live lookup, so that a watchlist shows changes at once: 0005
 * alternates CONNECTED and ABSENT (switched off); 0006 alternates its operator (its original one, then
 * another: it is ported away, then back, so is_ported alternates with it).
 */
const ALTERNATING_RULES: Readonly<Record<string, readonly [TestNumberRule, TestNumberRule]>> = {
  '0005': [
    { kind: 'answer', situation: 'reachable', isPorted: false },
    { kind: 'answer', situation: 'switched_off', isPorted: false },
  ],
  '0006': [
    { kind: 'answer', situation: 'reachable', isPorted: false },
    { kind: 'answer', situation: 'reachable', isPorted: true },
  ],
};

/** Bounds the memory of the lookup counts (only alternating numbers are counted); past it they start over. */
const MAX_COUNTED_NUMBERS = 100_000;

/**
 * The test-number table with the memory the alternating numbers need: one per sandbox adapter and
 * one per simulator. Lookups are counted per number and per kind of lookup (an upstream endpoint, a
 * check), so that the several lookups of one answer (network status and portability) agree.
 */
export class TestNumberTable {
  private readonly lookups = new Map<string, number>();

  /** The rule for one live lookup of `number` by `lookup`. */
  rule(number: string, lookup: string): TestNumberRule {
    const turns = ALTERNATING_RULES[number.slice(-4)];
    if (!turns) return testNumberRule(number);
    const key = `${lookup}:${number}`;
    const done = this.lookups.get(key) ?? 0;
    if (done === 0 && this.lookups.size >= MAX_COUNTED_NUMBERS) this.lookups.clear();
    this.lookups.set(key, done + 1);
    return turns[done % 2];
  }
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

/**
 * When a test number's SIM last changed, in hours before the lookup (docs/api.md, test numbers), shared
 * by the sandbox and the SIM swap simulators: 0007 two hours ago, 0008 a hundred hours ago (within the
 * default 168-hour window, outside a 72-hour one); any other number 4,000 hours ago (outside every
 * window the check allows).
 */
export const SIM_SWAP_HOURS_AGO: Readonly<Record<string, number>> = { '0007': 2, '0008': 100 };
export const SIM_SWAP_DEFAULT_HOURS_AGO = 4000;

export function simSwapHoursAgo(number: string): number {
  return SIM_SWAP_HOURS_AGO[number.slice(-4)] ?? SIM_SWAP_DEFAULT_HOURS_AGO;
}
