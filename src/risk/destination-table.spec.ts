import { DEFAULT_DESTINATIONS } from './destination-defaults';
import { DestinationTable } from './destination-table';

describe('DestinationTable', () => {
  const table = new DestinationTable({ '+882': 90, '+88213': 100, CU: 70, GB: 10, '+4470': 40 });

  it.each([
    ['the longest prefix wins over a shorter one', '+882130001234', null, {}, { risk: 100, key: '+88213', adjusted: false }],
    ['a prefix', '+882990001234', null, {}, { risk: 90, key: '+882', adjusted: false }],
    ['the country when no prefix matches', '+5352123456', 'CU', {}, { risk: 70, key: 'CU', adjusted: false }],
    ['a prefix wins over the country', '+447012345678', 'GB', {}, { risk: 40, key: '+4470', adjusted: false }],
    ['nothing matches: 0', '+14155552671', 'US', {}, { risk: 0, key: null, adjusted: false }],
    ["the account's adjustment at the same key", '+5352123456', 'CU', { CU: 0 }, { risk: 0, key: 'CU', adjusted: true }],
    ["the account's more specific prefix", '+447400123456', 'GB', { '+447400': 80 }, { risk: 80, key: '+447400', adjusted: true }],
    ["the deployment's more specific entry over the account's shorter one", '+882130001234', null, { '+882': 0 }, { risk: 100, key: '+88213', adjusted: false }],
    ['an account adjustment for a country the table lacks', '+14155552671', 'US', { US: 55 }, { risk: 55, key: 'US', adjusted: true }],
  ])('%s', (_, e164, country, adjustments, expected) => {
    expect(table.riskOf(e164, country, adjustments)).toEqual(expected);
  });

  it('holds the default table: non-geographic premium and satellite codes high, every entry 0-100', () => {
    const defaults = new DestinationTable(DEFAULT_DESTINATIONS);
    expect(defaults.riskOf('+979123456789', null).risk).toBe(100);
    expect(defaults.riskOf('+881612345678', null).risk).toBeGreaterThanOrEqual(80);
    for (const [key, risk] of Object.entries(DEFAULT_DESTINATIONS)) {
      expect(key).toMatch(/^(?:[A-Z]{2}|\+[1-9]\d{0,14})$/);
      expect(risk).toBeGreaterThanOrEqual(0);
      expect(risk).toBeLessThanOrEqual(100);
    }
  });
});
