import { NO_ROUTING, routeFor, RoutingRules } from './routing';

const PROVIDERS = ['hlr-lookups', 'backup', 'third'];

describe('routeFor', () => {
  const rules: RoutingRules = {
    checks: { line_type: ['backup'] },
    countries: { '1': ['third'], '44': ['backup', 'third'] },
    residency: { '49': ['hlr-lookups'], '33': [] },
  };

  it.each([
    ['no rules: LOOKUP_PROVIDERS order', NO_ROUTING, 'network_status', '+447400123456', ['hlr-lookups', 'backup', 'third']],
    ['residency applies to every check', rules, 'line_type', '+33612345678', []],
    ['the check order (no country rule)', rules, 'line_type', '+61412345678', ['backup', 'hlr-lookups', 'third']],
    ['a country rule puts its providers first', rules, 'network_status', '+12025550123', ['third', 'hlr-lookups', 'backup']],
    ['a country rule over the check order', rules, 'line_type', '+447400123456', ['backup', 'third', 'hlr-lookups']],
    ['residency keeps only the allowed providers', rules, 'network_status', '+4915112345678', ['hlr-lookups']],
    ['residency with none allowed: nowhere', rules, 'network_status', '+33612345678', []],
  ] as const)('%s', (_, given, check, e164, expected) => {
    expect(routeFor(given, PROVIDERS, check, e164)).toEqual(expected);
  });

  it('the longest calling code wins', () => {
    const nested: RoutingRules = { checks: {}, countries: { '4': ['third'], '44': ['backup'] }, residency: {} };
    expect(routeFor(nested, PROVIDERS, 'network_status', '+447400123456')[0]).toBe('backup');
    expect(routeFor(nested, PROVIDERS, 'network_status', '+4915112345678')[0]).toBe('third');
  });

  it('a country (ISO 3166) rule wins over its shared calling code: +1 is the US and Canada', () => {
    const shared: RoutingRules = { checks: {}, countries: { '1': ['third'], CA: ['backup'] }, residency: { '1': ['hlr-lookups', 'third'], CA: ['backup'] } };
    // +1 416 (Toronto) is Canada: only the backup may have it; +1 202 (Washington) keeps the +1 rules.
    expect(routeFor(shared, PROVIDERS, 'network_status', '+14165550123')).toEqual(['backup']);
    expect(routeFor(shared, PROVIDERS, 'network_status', '+12025550123')).toEqual(['third', 'hlr-lookups']);
  });
});
