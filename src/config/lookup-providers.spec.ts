import { AppConfig } from './app-config';
import { ConfigurationError, validateEnvironment } from './environment';
import { parseLookupProviders } from './lookup-providers';
import type { UpstreamAdapterName } from './upstream-adapters';

describe('LOOKUP_PROVIDERS', () => {
  it('PROVIDER is its shorthand with one entry: PROVIDER=hlr-lookups is LOOKUP_PROVIDERS=hlr-lookups, its settings HLR_LOOKUPS_*', () => {
    const settings = { HLR_LOOKUPS_KEY: 'k', HLR_LOOKUPS_SECRET: 's', HLR_LOOKUPS_URL: 'http://127.0.0.1:4010/api/v2/' };
    const shorthand = new AppConfig(validateEnvironment({ PROVIDER: 'hlr-lookups', ...settings }), 'postgres://x').provider.upstreams;
    expect(shorthand).toEqual([{ id: 'hlr-lookups', adapter: 'hlr-lookups', baseUrl: 'http://127.0.0.1:4010/api/v2', key: 'k', secret: 's', tokenUrl: '', price: 0 }]);
    expect(new AppConfig(validateEnvironment({ LOOKUP_PROVIDERS: 'hlr-lookups', ...settings }), 'postgres://x').provider.upstreams).toEqual(shorthand);
  });

  it('PROVIDER takes any adapter, each with the settings its protocol needs', () => {
    expect(validateEnvironment({ PROVIDER: 'twilio-lookup', TWILIO_LOOKUP_KEY: 'AC1', TWILIO_LOOKUP_SECRET: 't1' }).lookupProviderEntries).toEqual([
      { id: 'twilio-lookup', adapter: 'twilio-lookup', baseUrl: 'https://lookups.twilio.com', key: 'AC1', secret: 't1', tokenUrl: '', price: 0 },
    ]);
    expect(() => validateEnvironment({ PROVIDER: 'twilio-lookup' })).toThrow('TWILIO_LOOKUP_KEY and TWILIO_LOOKUP_SECRET: required for provider twilio-lookup (adapter twilio-lookup)');
    expect(() => validateEnvironment({ PROVIDER: 'pigeon' })).toThrow(/PROVIDER="pigeon": PROVIDER must be one of the following values: sandbox, hlr-lookups, twilio-lookup/);
  });

  it('neither set: the sandbox; both set and different: one line says to set one of them', () => {
    expect(validateEnvironment({}).lookupProviderEntries).toEqual([{ id: 'sandbox', adapter: 'sandbox', baseUrl: '', key: '', secret: '', tokenUrl: '', price: 0 }]);
    expect(validateEnvironment({ PROVIDER: 'sandbox', LOOKUP_PROVIDERS: 'sandbox' }).lookupProviderEntries).toHaveLength(1);
    expect(() => validateEnvironment({ PROVIDER: 'sandbox', LOOKUP_PROVIDERS: 'a,b', A_ADAPTER: 'sandbox', B_ADAPTER: 'sandbox' })).toThrow(
      'PROVIDER="sandbox": a shorthand for LOOKUP_PROVIDERS=sandbox, which is set to "a,b": set one of them',
    );
  });

  it('reads each id from <ID>_ADAPTER (default: the id), _URL (default: the adapter public API), _KEY and _SECRET, in priority order', () => {
    const env = validateEnvironment({
      LOOKUP_PROVIDERS: 'hlr-lookups, backup',
      HLR_LOOKUPS_KEY: 'k1',
      HLR_LOOKUPS_SECRET: 's1',
      BACKUP_ADAPTER: 'twilio-lookup',
      BACKUP_KEY: 'AC1',
      BACKUP_SECRET: 't1',
    });
    expect(new AppConfig(env, 'postgres://x').provider.upstreams).toEqual([
      { id: 'hlr-lookups', adapter: 'hlr-lookups', baseUrl: 'https://www.hlr-lookups.com/api/v2', key: 'k1', secret: 's1', tokenUrl: '', price: 0 },
      { id: 'backup', adapter: 'twilio-lookup', baseUrl: 'https://lookups.twilio.com', key: 'AC1', secret: 't1', tokenUrl: '', price: 0 },
    ]);
  });

  it('two accounts of one vendor can be primary and backup', () => {
    const env = validateEnvironment({
      LOOKUP_PROVIDERS: 'eu,us',
      EU_ADAPTER: 'hlr-lookups',
      EU_KEY: 'a',
      EU_SECRET: 'b',
      US_ADAPTER: 'hlr-lookups',
      US_URL: 'https://hlr.example.com/api/v2/',
      US_KEY: 'c',
      US_SECRET: 'd',
    });
    expect(env.lookupProviderEntries?.map((entry) => [entry.id, entry.adapter, entry.baseUrl])).toEqual([
      ['eu', 'hlr-lookups', 'https://www.hlr-lookups.com/api/v2'],
      ['us', 'hlr-lookups', 'https://hlr.example.com/api/v2'],
    ]);
  });

  it('names every mistake at start-up, one line each', () => {
    let message = '';
    try {
      validateEnvironment({ LOOKUP_PROVIDERS: 'Bad_Id,x,x,y,z', X_ADAPTER: 'nope', Y_ADAPTER: 'twilio-lookup', Z_ADAPTER: 'hlr-lookups', Z_URL: 'ftp://z', Z_KEY: 'k', Z_SECRET: 's' });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      message = (error as Error).message;
    }
    expect(message.split('\n').slice(1)).toEqual([
      '  - LOOKUP_PROVIDERS="Bad_Id,x,x,y,z": "Bad_Id" is not a provider id (lower-case letters, digits and dashes)',
      '  - X_ADAPTER="nope": must be one of sandbox, hlr-lookups, twilio-lookup, camara-sim-swap (provider x)',
      '  - LOOKUP_PROVIDERS="Bad_Id,x,x,y,z": x is listed twice',
      '  - Y_KEY and Y_SECRET: required for provider y (adapter twilio-lookup)',
      '  - Z_URL="ftp://z": must be an http(s) URL (provider z)',
    ]);
  });

  it('cost-aware between equals: ids joined by | are asked cheapest first (<ID>_PRICE), ties in the listed order, groups in priority order', () => {
    const env = validateEnvironment({
      LOOKUP_PROVIDERS: 'a|b|c,d',
      A_ADAPTER: 'sandbox',
      A_PRICE: '0.02',
      B_ADAPTER: 'sandbox',
      B_PRICE: '0.005',
      C_ADAPTER: 'sandbox',
      C_PRICE: '0.02',
      D_ADAPTER: 'sandbox',
      D_PRICE: '0',
    });
    expect(env.lookupProviderEntries?.map((entry) => entry.id)).toEqual(['b', 'a', 'c', 'd']);
    expect(() => validateEnvironment({ LOOKUP_PROVIDERS: 'a', A_ADAPTER: 'sandbox', A_PRICE: 'cheap' })).toThrow('A_PRICE="cheap": must be a number, 0 or more (provider a)');
  });

  it('a sandbox needs no credentials', () => {
    expect(validateEnvironment({ LOOKUP_PROVIDERS: 'sandbox' }).lookupProviderEntries).toEqual([{ id: 'sandbox', adapter: 'sandbox', baseUrl: '', key: '', secret: '', tokenUrl: '', price: 0 }]);
  });

  it('asks only for the settings the adapter declares: a bearer-token upstream needs <ID>_KEY and no <ID>_SECRET', () => {
    const bearer = { name: 'bearer-api' as UpstreamAdapterName, summary: 'a bearer-token upstream', checks: [], settings: { url: { default: 'https://bearer.example.com' }, key: 'the token' } };
    expect(parseLookupProviders('b', { B_ADAPTER: 'bearer-api', B_KEY: 'tok' }, [bearer])).toEqual({
      entries: [{ id: 'b', adapter: 'bearer-api', baseUrl: 'https://bearer.example.com', key: 'tok', secret: '', tokenUrl: '', price: 0 }],
      problems: [],
    });
    expect(parseLookupProviders('b', { B_ADAPTER: 'bearer-api', B_SECRET: 'x' }, [bearer]).problems).toEqual(['  - B_KEY: required for provider b (adapter bearer-api)']);
  });
});

describe('LOOKUP_ROUTING', () => {
  const providers = { LOOKUP_PROVIDERS: 'a,b', A_ADAPTER: 'sandbox', B_ADAPTER: 'sandbox' };

  it('reads per-check orders, calling-code rules and the residency list', () => {
    const routing = { checks: { line_type: ['b'] }, countries: { '1': ['b', 'a'], CA: ['a'] }, residency: { '49': ['a'], US: ['b'] } };
    const config = new AppConfig(validateEnvironment({ ...providers, LOOKUP_ROUTING: JSON.stringify(routing) }), 'postgres://x');
    expect(config.provider.routing).toEqual(routing);
  });

  it('names every mistake, one line each', () => {
    const routing = { checks: { sim_swop: ['a'], line_type: 'a' }, countries: { '+1': ['a'], '44': ['c'], XX: ['a'] }, extra: {} };
    expect(() => validateEnvironment({ ...providers, LOOKUP_ROUTING: JSON.stringify(routing) })).toThrow(
      [
        'Invalid configuration:',
        '  - LOOKUP_ROUTING.checks.sim_swop: not a check (network_status, line_type, portability, sim_swap)',
        '  - LOOKUP_ROUTING.checks.line_type: must be a list of provider ids',
        '  - LOOKUP_ROUTING.countries.44: c not in LOOKUP_PROVIDERS',
        '  - LOOKUP_ROUTING.countries.+1: not a country calling code (1 to 3 digits) or country code (ISO 3166, e.g. CA)',
        '  - LOOKUP_ROUTING.countries.XX: not a country calling code (1 to 3 digits) or country code (ISO 3166, e.g. CA)',
        '  - LOOKUP_ROUTING.extra: unknown (checks, countries, residency)',
      ].join('\n'),
    );
    expect(() => validateEnvironment({ ...providers, LOOKUP_ROUTING: '{' })).toThrow('LOOKUP_ROUTING: not JSON');
  });
});
