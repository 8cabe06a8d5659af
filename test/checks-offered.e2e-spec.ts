import { Logger } from '@nestjs/common';
import request from 'supertest';
import type { CheckDefinition } from '../src/checks/check-definition';
import { startTwilioSimulator, TWILIO_SIMULATOR_DEFAULTS, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { expectError } from './helpers/expect-error';
import { startTestApp, TestApp } from './helpers/test-app';
import { startProviderModule } from './provider-helpers';

/**
 * Adapters declare the checks they answer (src/config/upstream-adapters.ts): the router asks only the
 * providers that offer a check, a check that nothing here answers is refused where it is turned on and
 * named at start-up, and a call for one that an account still has on is a refunded 503, never a 500.
 */

const twilioOnly = (url: string) => ({
  PROVIDER: 'twilio-lookup',
  TWILIO_LOOKUP_URL: url,
  TWILIO_LOOKUP_KEY: TWILIO_SIMULATOR_DEFAULTS.key,
  TWILIO_LOOKUP_SECRET: TWILIO_SIMULATOR_DEFAULTS.secret,
});

/** A check registered without an adapter of its own, that no built-in adapter answers. */
const UNANSWERED: CheckDefinition = {
  name: 'roaming',
  title: 'Roaming',
  defaultEnabled: false,
  price: { variable: 'PRICE_ROAMING', default: 2 },
  cacheTtlSeconds: { variable: 'CACHE_TTL_ROAMING_SECONDS', default: 60 },
  fields: ['roaming'],
  shows: {},
  reports: ['roaming'],
  watches: [],
  csvColumns: ['roaming'],
};

describe('the router asks only providers that offer a check', () => {
  let twilio: TwilioSimulator;
  let hlr: UpstreamSimulator;
  beforeAll(async () => {
    [twilio, hlr] = await Promise.all([startTwilioSimulator(), startUpstreamSimulator()]);
  });
  afterAll(() => Promise.all([twilio?.close(), hlr?.close()]));

  it('sends portability straight to the provider that offers it: the first one, which does not, is neither asked nor counted as a failover', async () => {
    const providers = await startProviderModule({
      LOOKUP_PROVIDERS: 'primary,backup',
      PRIMARY_ADAPTER: 'twilio-lookup',
      PRIMARY_URL: twilio.url,
      PRIMARY_KEY: TWILIO_SIMULATOR_DEFAULTS.key,
      PRIMARY_SECRET: TWILIO_SIMULATOR_DEFAULTS.secret,
      BACKUP_ADAPTER: 'hlr-lookups',
      BACKUP_URL: hlr.url,
      BACKUP_KEY: 'sim-key',
      BACKUP_SECRET: 'sim-secret',
    });
    try {
      twilio.resetStats();
      const report = await providers.lookups.lookUp('+447400120002', { network_status: false, line_type: false, portability: true });
      expect(report.answers.portability).toMatchObject({ provider: 'backup', fields: { is_ported: true } });
      expect(twilio.stats().requests).toBe(0);
      expect(Object.fromEntries(providers.provider.failovers())).toEqual({});
      // The checks both offer still go to the first.
      await expect(providers.lookups.lookUp('+447400120001', { network_status: true })).resolves.toMatchObject({ answers: { network_status: { provider: 'primary' } } });
    } finally {
      await providers.close();
    }
  });

  it('names at start-up, in one line, the checks that no configured provider offers; a lookup of one is refused without a request', async () => {
    const warned = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    let providers: Awaited<ReturnType<typeof startProviderModule>> | undefined;
    try {
      providers = await startProviderModule(twilioOnly(twilio.url));
      const lines = warned.mock.calls.map((call) => String(call[0])).filter((line) => line.includes('offers the check'));
      expect(lines).toEqual([
        'No configured lookup provider (twilio-lookup) offers the check portability: turning it on is refused (400), and an account that has it on gets 503 PROVIDER_UNAVAILABLE for it, refunded.',
      ]);
      twilio.resetStats();
      await expect(providers.lookups.lookUp('+447400120002', { portability: true })).rejects.toMatchObject({ code: 'PROVIDER_UNAVAILABLE' });
      expect(twilio.stats().requests).toBe(0);
    } finally {
      warned.mockRestore();
      await providers?.close();
    }
  });
});

describe('a check that nothing here answers, over HTTP', () => {
  let twilio: TwilioSimulator;
  let t: TestApp;
  beforeAll(async () => {
    twilio = await startTwilioSimulator();
    t = await startTestApp(twilioOnly(twilio.url), { checks: [{ definition: UNANSWERED }] });
  });
  afterAll(async () => {
    await t?.close();
    await twilio?.close();
  });

  const patch = (auth: { Authorization: string }, checks: Record<string, boolean>) => request(t.http).patch('/api/v1/settings').set(auth).send({ checks });

  it.each([
    ['portability (no adapter of Twilio Lookup answers it)', 'portability'],
    ['a registered check that came without an adapter', 'roaming'],
  ])('is refused with a 400 naming it when it is turned on: %s', async (_case, check) => {
    const account = await createAccount(t, { credits: 100 });
    const refused = await patch(account.auth, { line_type: true, [check]: true });
    expectError(refused, 400, 'INVALID_REQUEST');
    expect(refused.body.error.message).toBe(`checks.${check} cannot be turned on: no configured lookup provider offers it (providers here: twilio-lookup).`);
    // Nothing of the change was made; what is offered turns on, and turning the check off is always allowed.
    expect((await request(t.http).get('/api/v1/settings').set(account.auth).expect(200)).body.checks).toMatchObject({ line_type: false, [check]: false });
    await patch(account.auth, { line_type: true, [check]: false }).expect(200);
  });

  it('an account that had one on before (another deployment) gets a refunded 503 for it, never a 500, and nothing is asked upstream', async () => {
    const account = await createAccount(t, { credits: 100 });
    // Turned on while another provider was configured: written as that deployment's settings left it.
    await t.db.query(`UPDATE account_settings SET checks = ARRAY['network_status', 'roaming'] WHERE account_id = $1`, [account.id]);
    const [phone] = distinctNumbers(1, 71);
    twilio.resetStats();
    const res = await request(t.http).post('/api/v1/filter').set(account.auth).set('Cache-Control', 'no-cache').send({ phone });
    expectError(res, 503, 'PROVIDER_UNAVAILABLE');
    expect((await request(t.http).get('/api/v1/balance').set(account.auth).expect(200)).body.balance).toBe(100);
    // The network status was asked (once), the unanswered check never.
    expect(twilio.stats().requests).toBe(1);
  });
});
