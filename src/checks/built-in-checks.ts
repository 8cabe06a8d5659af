import type { CheckDefinition } from './check-definition';

/**
 * The checks of the contract (docs/api.md "Checks, prices and settings"), in the order their fields
 * are filled and their columns listed. Only sim_swap reports fields beyond /filter's six (bulk results,
 * the bulk CSV and watchlist changes of accounts that turn it on); every full record is kept in the cache.
 */
export const BUILT_IN_CHECKS: readonly CheckDefinition[] = [
  {
    name: 'network_status',
    title: 'Network Connection Status',
    defaultEnabled: true,
    price: { variable: 'PRICE_NETWORK_STATUS', default: 4 },
    cacheTtlSeconds: { variable: 'CACHE_TTL_NETWORK_STATUS_SECONDS', default: 3600 },
    fields: ['status', 'carrier', 'status_reason', 'mcc', 'mnc'],
    shows: { status: 'status', carrier: 'carrier' },
    reports: [],
    watches: ['status', 'valid', 'carrier'],
    csvColumns: ['status', 'carrier'],
  },
  {
    name: 'line_type',
    title: 'Phone Number Type',
    defaultEnabled: false,
    price: { variable: 'PRICE_LINE_TYPE', default: 1 },
    cacheTtlSeconds: { variable: 'CACHE_TTL_LINE_TYPE_SECONDS', default: 2_592_000 },
    fields: ['line_type'],
    shows: { line_type: 'line_type' },
    reports: [],
    watches: ['line_type'],
    csvColumns: ['line_type'],
  },
  {
    name: 'portability',
    title: 'Portability Status',
    defaultEnabled: false,
    price: { variable: 'PRICE_PORTABILITY', default: 2 },
    cacheTtlSeconds: { variable: 'CACHE_TTL_PORTABILITY_SECONDS', default: 86_400 },
    fields: ['is_ported', 'carrier', 'mcc', 'mnc'],
    shows: { is_ported: 'is_ported', carrier: 'carrier' },
    reports: [],
    watches: ['is_ported', 'carrier'],
    csvColumns: ['is_ported', 'carrier'],
  },
  {
    // docs/api.md "SIM swap": whether the SIM behind the number changed within the account's window,
    // and when it last changed when the operator tells. Never in /filter's six fields.
    name: 'sim_swap',
    title: 'SIM Swap',
    defaultEnabled: false,
    price: { variable: 'PRICE_SIM_SWAP', default: 3 },
    cacheTtlSeconds: { variable: 'CACHE_TTL_SIM_SWAP_SECONDS', default: 900 },
    fields: ['sim_swapped', 'last_sim_swap_at'],
    shows: {},
    reports: ['sim_swapped', 'last_sim_swap_at'],
    watches: ['sim_swapped', 'last_sim_swap_at'],
    csvColumns: ['sim_swapped', 'last_sim_swap_at'],
    options: [
      {
        name: 'window_hours',
        description:
          '`sim_swapped` is true when the SIM changed within this many hours before the lookup (1 to 2400, the longest period the operators\' CAMARA SimSwap API checks).',
        min: 1,
        max: 2400,
        default: 168,
      },
    ],
  },
];
