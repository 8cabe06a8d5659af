import { TwilioLookupAdapter } from '../src/provider/adapters/twilio-lookup.adapter';
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

  it('maps Line Status to the network status (active → CONNECTED, unreachable → ABSENT, unknown → UNDETERMINED)', async () => {
    await expect(checkFields(adapter, 'network_status', TEST_NUMBERS.connected)).resolves.toEqual({ status: 'CONNECTED', carrier: null });
    await expect(checkFields(adapter, 'network_status', TEST_NUMBERS.absent)).resolves.toEqual({ status: 'ABSENT', carrier: null });
    await expect(checkFields(adapter, 'network_status', TEST_NUMBERS.undetermined)).resolves.toEqual({ status: 'UNDETERMINED', carrier: null });
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

  it('portability is not offered: a refundable failure, never an answer', async () => {
    expect(await failureOf(adapter.answer('portability', TEST_NUMBERS.connected))).toEqual({ reason: 'upstream_error', kind: 'not_offered' });
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
});
