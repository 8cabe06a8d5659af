import 'reflect-metadata';
import { AppError } from '../src/common/errors';
import type { EnabledChecks } from '../src/checks/checks';
import type { PhoneAnswerDto } from '../src/checks/phone-answer.dto';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { startTwilioSimulator, TWILIO_SIMULATOR_DEFAULTS, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { hlrLookupsEnv, ProviderTestModule, startProviderModule } from './provider-helpers';

/** The checks every provider offers (Twilio Lookup has no portability). */
const CHECKS: EnabledChecks = { network_status: true, line_type: true, portability: false };

/** Short enough for the slow number, long enough for a loaded machine; no retry, so the slow number ends once. */
const TIMING = { PROVIDER_TIMEOUT_MS: '1500', PROVIDER_RETRIES: '0', PROVIDER_BREAKER_MIN_CALLS: '1000' };

/**
 * Each state of the sandbox's test-number table (docs/api.md), on a UK mobile number of Three, and
 * what every provider must answer for it: the same six fields and the same charge (`null`: 503
 * PROVIDER_UNAVAILABLE, refunded).
 */
const STATES: Array<[state: string, e164: string, expected: Omit<PhoneAnswerDto, 'country' | 'line_type' | 'is_ported'> | null]> = [
  ['reachable (any other ending)', '+447400123456', { valid: true, status: 'CONNECTED', carrier: 'Three' }],
  ['switched off (0000)', '+447400120000', { valid: false, status: 'ABSENT', carrier: 'Three' }],
  ['the network cannot tell (0001)', '+447400120001', { valid: true, status: 'UNDETERMINED', carrier: 'Three' }],
  ['ported (0002)', '+447400120002', { valid: true, status: 'CONNECTED', carrier: 'EE' }],
  ['failing (0003)', '+447400120003', null],
  ['slow (0004)', '+447400120004', null],
  ['alternating status, first turn (0005)', '+447400120005', { valid: true, status: 'CONNECTED', carrier: 'Three' }],
  ['alternating operator, first turn (0006)', '+447400120006', { valid: true, status: 'CONNECTED', carrier: 'Three' }],
  ['subscribed, reachability unknown (0008)', '+447400120008', { valid: true, status: 'UNDETERMINED', carrier: 'Three' }],
  ['assigned to no subscriber (0009)', '+447400120009', { valid: false, status: 'ABSENT', carrier: null }],
];

interface Provider {
  name: string;
  /** Whether its network check names the operator (Twilio's Line Status does not: carrier null, docs/api.md). */
  namesOperator: boolean;
  module: ProviderTestModule;
}

/** The answer of one call and what it is charged: the six fields and the checks' price, or a refund (0). */
async function call(module: ProviderTestModule, e164: string): Promise<{ answer: PhoneAnswerDto | 'PROVIDER_UNAVAILABLE'; charged: number }> {
  try {
    const answer = await module.phoneAnswer(e164, CHECKS, { maxAgeSeconds: 0 });
    return { answer, charged: module.registry.costOf(CHECKS) };
  } catch (error) {
    if (error instanceof AppError && error.code === 'PROVIDER_UNAVAILABLE') return { answer: 'PROVIDER_UNAVAILABLE', charged: 0 };
    throw error;
  }
}

/**
 * One meaning whichever provider answers (issue 37): each test-number state through the sandbox, the
 * hlr-lookups adapter against its simulator and the Twilio Lookup adapter against its simulator, in
 * process (the real ProviderModule, no HTTP API). Each simulator says the state in its own words; each
 * adapter maps them back with its provider's table.
 */
describe('every provider answers each test-number state alike', () => {
  let hlrSim: UpstreamSimulator;
  let twilioSim: TwilioSimulator;
  const providers: Provider[] = [];

  beforeAll(async () => {
    [hlrSim, twilioSim] = await Promise.all([startUpstreamSimulator(), startTwilioSimulator()]);
    const twilioEnv = {
      LOOKUP_PROVIDERS: 'twilio',
      TWILIO_ADAPTER: 'twilio-lookup',
      TWILIO_URL: twilioSim.url,
      TWILIO_KEY: TWILIO_SIMULATOR_DEFAULTS.key,
      TWILIO_SECRET: TWILIO_SIMULATOR_DEFAULTS.secret,
    };
    const [sandbox, hlr, twilio] = await Promise.all([
      startProviderModule({ PROVIDER: 'sandbox', ...TIMING }),
      startProviderModule({ ...hlrLookupsEnv(hlrSim.url), ...TIMING }),
      startProviderModule({ ...twilioEnv, ...TIMING }),
    ]);
    providers.push({ name: 'sandbox', namesOperator: true, module: sandbox }, { name: 'hlr-lookups', namesOperator: true, module: hlr }, { name: 'twilio', namesOperator: false, module: twilio });
  });
  afterAll(async () => {
    await Promise.all(providers.map(({ module }) => module.close()));
    await Promise.all([hlrSim?.close(), twilioSim?.close()]);
  });

  it.each(STATES)('%s: the same answer and the same charge from every provider', async (_state, e164, expected) => {
    const outcomes = await Promise.all(providers.map(async (provider) => ({ provider: provider.name, ...(await call(provider.module, e164)) })));
    const wanted = (provider: Provider) =>
      expected === null
        ? { provider: provider.name, answer: 'PROVIDER_UNAVAILABLE', charged: 0 }
        : {
            provider: provider.name,
            answer: { country: 'GB', line_type: 'MOBILE', is_ported: false, ...expected, carrier: provider.namesOperator ? expected.carrier : null },
            charged: 5,
          };
    expect(outcomes).toEqual(providers.map(wanted));
  });

  it('a switched-off phone: ABSENT and not valid from hlr-lookups and from Twilio alike, charged alike', async () => {
    const [, hlr, twilio] = await Promise.all(providers.map((provider) => call(provider.module, '+447400130000')));
    expect(hlr).toEqual({ answer: expect.objectContaining({ status: 'ABSENT', valid: false }), charged: 5 });
    expect(twilio).toEqual({ answer: { ...(hlr.answer as PhoneAnswerDto), carrier: null }, charged: 5 });
  });
});
