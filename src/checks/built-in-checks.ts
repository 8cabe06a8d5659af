import type { CheckDefinition } from './check-definition';

/**
 * The checks of the contract (docs/api.md "Checks, prices and settings"), in the order their fields
 * are filled and their columns listed. None reports a field beyond /filter's six: the contract's
 * bulk and watchlist bodies stay as they are; their full records are kept in the cache.
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
];
