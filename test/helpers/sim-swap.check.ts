import type { CheckAdapter, CheckAnswer, CheckDefinition, CheckRegistration } from '../../src/checks/check-definition';

/**
 * A fourth check that lives only in test/: "SIM swapped in the last 7 days", with its own price and
 * cache lifetime (and the variables they come from), a field that /filter does not show but bulk
 * results, the bulk CSV and watchlist changes do. Registering it needs no change under src/.
 */
export const SIM_SWAP: CheckDefinition = {
  name: 'sim_swap',
  title: 'SIM Swap (last 7 days)',
  defaultEnabled: false,
  price: { variable: 'PRICE_SIM_SWAP', default: 3 },
  cacheTtlSeconds: { variable: 'CACHE_TTL_SIM_SWAP_SECONDS', default: 600 },
  fields: ['sim_swapped', 'swap_seen_at'],
  shows: {},
  reports: ['sim_swapped'],
  watches: ['sim_swapped'],
  csvColumns: ['sim_swapped'],
};

/**
 * The test adapter that answers it: a number's SIM is "swapped" at every second live lookup of it
 * (false, true, false...), so that a watchlist's second round sees a change. It counts its calls.
 */
export class SimSwapTestAdapter implements CheckAdapter {
  readonly name = 'sim-swap-test';
  readonly asked: string[] = [];
  private readonly lookups = new Map<string, number>();

  async answer(check: string, e164: string): Promise<CheckAnswer> {
    if (check !== SIM_SWAP.name) throw new Error(`sim-swap-test answers only ${SIM_SWAP.name}, not ${check}`);
    this.asked.push(e164);
    const count = (this.lookups.get(e164) ?? 0) + 1;
    this.lookups.set(e164, count);
    const swapped = count % 2 === 0;
    const observedAt = new Date().toISOString();
    return { check, fields: { sim_swapped: swapped, swap_seen_at: swapped ? observedAt : null }, provider: this.name, observedAt };
  }
}

export function simSwapRegistration(adapter: SimSwapTestAdapter): CheckRegistration {
  return { definition: SIM_SWAP, adapter };
}
