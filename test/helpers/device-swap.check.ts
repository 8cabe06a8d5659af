import type { CheckAdapter, CheckAnswer, CheckDefinition, CheckRegistration } from '../../src/checks/check-definition';

/**
 * A check that lives only in test/: "device swapped in the last 7 days" (the phone behind the number changed), with its own price and
 * cache lifetime (and the variables they come from), a field that /filter does not show but bulk
 * results, the bulk CSV and watchlist changes do. Registering it needs no change under src/.
 */
export const DEVICE_SWAP: CheckDefinition = {
  name: 'device_swap',
  title: 'Device swap (last 7 days)',
  defaultEnabled: false,
  price: { variable: 'PRICE_DEVICE_SWAP', default: 3 },
  cacheTtlSeconds: { variable: 'CACHE_TTL_DEVICE_SWAP_SECONDS', default: 600 },
  fields: ['device_swapped', 'device_swap_seen_at'],
  shows: {},
  reports: ['device_swapped'],
  watches: ['device_swapped'],
  csvColumns: ['device_swapped'],
};

/**
 * The test adapter that answers it: a number's device is "swapped" at every second live lookup of it
 * (false, true, false...), so that a watchlist's second round sees a change. It counts its calls.
 */
export class DeviceSwapTestAdapter implements CheckAdapter {
  readonly name = 'device-swap-test';
  readonly asked: string[] = [];
  private readonly lookups = new Map<string, number>();

  async answer(check: string, e164: string): Promise<CheckAnswer> {
    if (check !== DEVICE_SWAP.name) throw new Error(`device-swap-test answers only ${DEVICE_SWAP.name}, not ${check}`);
    this.asked.push(e164);
    const count = (this.lookups.get(e164) ?? 0) + 1;
    this.lookups.set(e164, count);
    const swapped = count % 2 === 0;
    const observedAt = new Date().toISOString();
    return { check, fields: { device_swapped: swapped, device_swap_seen_at: swapped ? observedAt : null }, provider: this.name, observedAt };
  }
}

export function deviceSwapRegistration(adapter: DeviceSwapTestAdapter): CheckRegistration {
  return { definition: DEVICE_SWAP, adapter };
}
