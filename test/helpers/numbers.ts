/**
 * Numbers valid for their numbering plan, by the last four digits of the sandbox/simulator
 * test-number table (docs/api.md).
 */
export const TEST_NUMBERS = {
  connected: '+447400123456',
  absent: '+447400120000',
  undetermined: '+447400120001',
  ported: '+447400120002',
  failing: '+447400120003',
  slow: '+447400120004',
  flapping: '+447400120005',
  switching: '+447400120006',
} as const;

export const SIX_FIELDS = ['carrier', 'country', 'is_ported', 'line_type', 'status', 'valid'];
