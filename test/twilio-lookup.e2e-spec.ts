import { Logger, LoggerService } from '@nestjs/common';
import { TwilioLookupAdapter } from '../src/provider/adapters/twilio-lookup.adapter';
import { basicAuthorization } from '../src/provider/adapters/twilio-lookup.protocol';
import { ResilientUpstream } from '../src/provider/resilience/resilient-upstream';
import { startTwilioSimulator, TWILIO_SIMULATOR_DEFAULTS, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { TEST_NUMBERS } from './helpers/numbers';
import { checkFields } from './provider-helpers';

const BREAKER = { failureRate: 0.5, windowMs: 10_000, minCalls: 5, halfOpenMs: 60_000 };

function twilioAdapter(baseUrl: string, secret = TWILIO_SIMULATOR_DEFAULTS.secret): TwilioLookupAdapter {
  return new TwilioLookupAdapter(
    { baseUrl, key: TWILIO_SIMULATOR_DEFAULTS.key, secret },
    new ResilientUpstream('twilio', baseUrl, { timeoutMs: 1000, retries: 0, breaker: BREAKER, maxResponseBytes: 1024 * 1024, sockets: { interactive: 16, batch: 16 } }),
  );
}

const failureOf = (promise: Promise<unknown>) => promise.then(() => undefined, (error: { reason?: string; kind?: string }) => ({ reason: error.reason, kind: error.kind }));

describe('Twilio Lookup v2 adapter against its simulator', () => {
  let simulator: TwilioSimulator;
  let adapter: TwilioLookupAdapter;
  beforeAll(async () => {
    simulator = await startTwilioSimulator();
  });
  afterAll(() => simulator.close());
  beforeEach(() => {
    adapter = twilioAdapter(simulator.url);
  });
  afterEach(() => {
    adapter.onModuleDestroy();
    simulator.setOptions({ fault: null, faultsByNumber: {}, outage: false });
  });

  const networkRecord = async (e164: string) => (await adapter.answer('network_status', e164)).fields;

  it.each([
    ['reachable', TEST_NUMBERS.connected, 'CONNECTED'],
    ['unreachable (switched off)', TEST_NUMBERS.absent, 'ABSENT'],
    ['unknown', TEST_NUMBERS.undetermined, 'UNDETERMINED'],
    ['active (not necessarily reachable)', '+447400120008', 'UNDETERMINED'],
    ['inactive (assigned to no subscriber)', '+447400120009', 'ABSENT'],
  ])('reads the Line Status %s (test number %s) as %s, keeping Twilio’s word as the status reason', async (word, e164, status) => {
    await expect(networkRecord(e164)).resolves.toEqual({ status, carrier: null, status_reason: word.split(' ')[0], mcc: null, mnc: null });
  });

  it('never calls a phone Twilio says is only active CONNECTED: the handset may be switched off', async () => {
    await expect(networkRecord('+447400130008')).resolves.toMatchObject({ status: 'UNDETERMINED', status_reason: 'active' });
  });

  it('maps Line Type Intelligence to the line type', async () => {
    await expect(checkFields(adapter, 'line_type', TEST_NUMBERS.connected)).resolves.toEqual({ line_type: 'MOBILE' });
    await expect(checkFields(adapter, 'line_type', '+442079460000')).resolves.toEqual({ line_type: 'FIXED_LINE' });
  });

  it('answers the port one check at a time with its full record, naming the provider', async () => {
    await expect(adapter.answer('network_status', TEST_NUMBERS.connected)).resolves.toMatchObject({
      check: 'network_status',
      provider: 'twilio',
      fields: { status: 'CONNECTED', carrier: null, mcc: null, mnc: null },
    });
    await expect(adapter.answer('line_type', TEST_NUMBERS.connected)).resolves.toMatchObject({ check: 'line_type', fields: { line_type: 'MOBILE' } });
  });

  it('offers the checks its descriptor lists, not portability: asked for it all the same, it refuses without a request (refundable, never an answer)', async () => {
    expect(['network_status', 'line_type', 'portability'].map((check) => adapter.offers(check))).toEqual([true, true, false]);
    simulator.resetStats();
    expect(await failureOf(adapter.answer('portability', TEST_NUMBERS.connected))).toEqual({ reason: 'upstream_error', kind: 'not_offered' });
    expect(simulator.stats().requests).toBe(0);
  });

  it.each([
    ['no-coverage', 'no_coverage'],
    ['error-code', 'query_failed'],
    ['unknown-word', 'invalid_answer'],
    ['wrong-type', 'invalid_answer'],
    ['partial', 'invalid_answer'],
    ['http-500', 'http_500'],
    ['http-404', 'http_404'],
    ['giant', 'oversized'],
  ] as const)('fault %s is a refundable failure (%s), never a charged answer', async (fault, kind) => {
    simulator.setOptions({ fault });
    expect(await failureOf(checkFields(adapter, 'network_status', TEST_NUMBERS.connected))).toMatchObject({ kind });
  });

  it('wrong credentials: unauthorized; the probe says so too', async () => {
    const wrong = twilioAdapter(simulator.url, 'wrong-token');
    try {
      expect(await failureOf(checkFields(wrong, 'network_status', TEST_NUMBERS.connected))).toEqual({ reason: 'unauthorized', kind: 'http_401' });
      await expect(wrong.ping()).rejects.toMatchObject({ reason: 'unauthorized' });
      await expect(adapter.ping()).resolves.toBeUndefined();
    } finally {
      wrong.onModuleDestroy();
    }
  });

  it('a failing test number (error_code in the package) is that number failing: the breaker stays closed', async () => {
    for (let i = 0; i < 10; i++) expect(await failureOf(checkFields(adapter, 'network_status', TEST_NUMBERS.failing))).toMatchObject({ kind: 'query_failed' });
    expect(adapter.circuitState('interactive')).toBe('closed');
    simulator.setOptions({ outage: true });
    for (let i = 0; i < 15; i++) await failureOf(checkFields(adapter, 'network_status', TEST_NUMBERS.connected));
    expect(adapter.circuitState('interactive')).toBe('open');
    expect(adapter.circuitState('batch')).toBe('closed');
  });

  describe('Twilio’s own validity verdict never replaces the numbering plan', () => {
    const warnings: string[] = [];
    const recorder: LoggerService = { log: () => {}, error: () => {}, warn: (message: unknown) => warnings.push(String(message)) };
    beforeEach(() => {
      warnings.length = 0;
      Logger.overrideLogger(recorder);
    });
    afterEach(() => Logger.overrideLogger(['error']));

    it('valid: false with a line status: answered from the status looked up, not ABSENT', async () => {
      simulator.setOptions({ fault: 'invalid-verdict' });
      await expect(networkRecord(TEST_NUMBERS.connected)).resolves.toMatchObject({ status: 'CONNECTED', status_reason: 'reachable' });
      await expect(networkRecord(TEST_NUMBERS.undetermined)).resolves.toMatchObject({ status: 'UNDETERMINED' });
      await expect(adapter.answer('line_type', TEST_NUMBERS.connected)).resolves.toMatchObject({ fields: { line_type: 'MOBILE' } });
    });

    it('valid: false and nothing looked up: a refundable no_coverage failure (the router asks the next provider), never a charged ABSENT or UNKNOWN', async () => {
      simulator.setOptions({ fault: 'invalid-verdict-no-data' });
      expect(await failureOf(adapter.answer('network_status', TEST_NUMBERS.connected))).toEqual({ reason: 'upstream_error', kind: 'no_coverage' });
      expect(await failureOf(adapter.answer('line_type', TEST_NUMBERS.connected))).toEqual({ reason: 'upstream_error', kind: 'no_coverage' });
      expect(adapter.attempts.failures()).toEqual(expect.arrayContaining([{ check: 'network_status', reason: 'no_coverage', count: 1 }]));
    });

    it('logs the validation_errors once, never the number', async () => {
      simulator.setOptions({ fault: 'invalid-verdict-no-data' });
      await failureOf(adapter.answer('network_status', TEST_NUMBERS.connected));
      await failureOf(adapter.answer('network_status', TEST_NUMBERS.connected));
      const verdicts = warnings.filter((line) => line.includes('validation_errors'));
      expect(verdicts).toHaveLength(1);
      expect(verdicts[0]).toContain('INVALID_BUT_POSSIBLE');
      expect(warnings.join('\n')).not.toMatch(/7400123456|447400/);
    });
  });

  it.each([60601, 60607, 60610, 60612, 60614, 60619] as const)(
    'error_code %s (this provider cannot answer this number) is no_coverage: refunded or asked elsewhere, not counted against its health',
    async (code) => {
      simulator.setOptions({ fault: `error-${code}` });
      for (let i = 0; i < 6; i++) expect(await failureOf(adapter.answer('line_type', TEST_NUMBERS.connected))).toEqual({ reason: 'upstream_error', kind: 'no_coverage' });
      expect(adapter.attempts.failures()).toEqual([{ check: 'line_type', reason: 'no_coverage', count: 6 }]);
      expect(adapter.circuitState('interactive')).toBe('closed');
    },
  );

  it.each([60606, 60608] as const)('error_code %s is the lookup failing (lookup_failed), refunded', async (code) => {
    simulator.setOptions({ fault: `error-${code}` });
    expect(await failureOf(adapter.answer('network_status', TEST_NUMBERS.connected))).toEqual({ reason: 'upstream_error', kind: 'query_failed' });
    expect(adapter.attempts.failures()).toEqual([{ check: 'network_status', reason: 'lookup_failed', count: 1 }]);
  });

  it('a Canadian line type without the CLNPC’s authorization answers 60601: no_coverage; its network status is unaffected', async () => {
    simulator.setOptions({ canadaAuthorized: false });
    try {
      expect(await failureOf(adapter.answer('line_type', '+14162345678'))).toMatchObject({ kind: 'no_coverage' });
      await expect(adapter.answer('line_type', '+447400123456')).resolves.toMatchObject({ fields: { line_type: 'MOBILE' } });
      await expect(networkRecord('+14162345678')).resolves.toMatchObject({ status: 'CONNECTED' });
    } finally {
      simulator.setOptions({ canadaAuthorized: true });
    }
  });

  describe('the simulator answers as Twilio documents', () => {
    const get = (path: string, secret = TWILIO_SIMULATOR_DEFAULTS.secret) =>
      fetch(`${simulator.url}${path}`, { headers: { Authorization: basicAuthorization({ key: TWILIO_SIMULATOR_DEFAULTS.key, secret }) } });

    it('every field of the phone-number resource, and the carrier of Line Type Intelligence', async () => {
      const response = await get('/v2/PhoneNumbers/%2B447400120002?Fields=line_type_intelligence');
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({
        calling_country_code: '44',
        country_code: 'GB',
        phone_number: '+447400120002',
        national_format: '07400 120002',
        valid: true,
        validation_errors: [],
        line_status: null,
        sim_swap: null,
        // Ported away from Three: the carrier serving it now.
        line_type_intelligence: { type: 'mobile', carrier_name: 'EE', mobile_country_code: '234', mobile_network_code: '30', error_code: null },
        url: 'https://lookups.twilio.com/v2/PhoneNumbers/+447400120002',
      });
    });

    it.each([
      ['a wrong password', { secret: 'wrong' }, 401, 20003],
      ['an unknown path', { path: '/v2/Nothing' }, 404, 20404],
      ['HTTP 400', { fault: 'http-400' as const }, 400, 400],
      ['HTTP 429', { fault: 'http-429' as const }, 429, 20429],
      ['HTTP 500', { fault: 'http-500' as const }, 500, 20500],
      ['an outage', { outage: true }, 503, 20503],
    ])('%s: Twilio’s own error code', async (_, setup: { secret?: string; path?: string; fault?: 'http-400' | 'http-429' | 'http-500'; outage?: boolean }, status, code) => {
      simulator.setOptions({ fault: setup.fault ?? null, outage: setup.outage ?? false });
      const response = await get(setup.path ?? '/v2/PhoneNumbers/%2B447400123456?Fields=line_status', setup.secret);
      expect(response.status).toBe(status);
      expect(await response.json()).toEqual({ code, message: expect.any(String), more_info: `https://www.twilio.com/docs/errors/${code}`, status });
    });
  });
});
