import request from 'supertest';
import { CamaraSimSwapAdapter } from '../src/provider/adapters/camara-sim-swap.adapter';
import { TwilioLookupAdapter } from '../src/provider/adapters/twilio-lookup.adapter';
import { ResilientUpstream } from '../src/provider/resilience/resilient-upstream';
import { CAMARA_SIMULATOR_DEFAULTS, CamaraSimulator, startCamaraSimulator } from '../tools/camara-simulator/simulator';
import { startTwilioSimulator, TWILIO_SIMULATOR_DEFAULTS, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { csvRecords, waitForBulkJob } from './helpers/bulk';
import { expectError } from './helpers/expect-error';
import { SIX_FIELDS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';
import { startProviderModule } from './provider-helpers';

/**
 * The SIM swap check (docs/api.md "SIM swap") end to end against both real upstreams' simulators: an
 * operator's CAMARA SimSwap API (OAuth2 client credentials) and Twilio Lookup v2's sim_swap package;
 * failover between them; the account's window (check_options) in settings, lookups and the cache;
 * its fields in bulk results and CSV only for jobs that have it on, never in /filter.
 * Test numbers (test-numbers.ts): 0007 changed SIM 2 hours ago, 0008 100 hours ago, others 4,000 hours ago.
 */
const RECENT = '+447400120007';
const HUNDRED_HOURS = '+447400120008';
const LONG_AGO = '+447400123456';
const ADMIN_TOKEN = 'sim-swap-admin-token-0123456789abcdef';

const POLICIES = { timeoutMs: 2000, retries: 0, breaker: { failureRate: 0.5, windowMs: 10_000, minCalls: 1000, halfOpenMs: 60_000 }, maxResponseBytes: 1024 * 1024, sockets: { interactive: 16, batch: 16 } };

function camaraEnv(id: string, camara: CamaraSimulator): Record<string, string> {
  const prefix = id.toUpperCase();
  return {
    [`${prefix}_ADAPTER`]: 'camara-sim-swap',
    [`${prefix}_URL`]: camara.url,
    [`${prefix}_TOKEN_URL`]: camara.tokenUrl,
    [`${prefix}_KEY`]: CAMARA_SIMULATOR_DEFAULTS.clientId,
    [`${prefix}_SECRET`]: CAMARA_SIMULATOR_DEFAULTS.clientSecret,
  };
}

function twilioEnv(id: string, twilio: TwilioSimulator): Record<string, string> {
  const prefix = id.toUpperCase();
  return {
    [`${prefix}_ADAPTER`]: 'twilio-lookup',
    [`${prefix}_URL`]: twilio.url,
    [`${prefix}_KEY`]: TWILIO_SIMULATOR_DEFAULTS.key,
    [`${prefix}_SECRET`]: TWILIO_SIMULATOR_DEFAULTS.secret,
  };
}

let camara: CamaraSimulator;
let twilio: TwilioSimulator;
beforeAll(async () => {
  [camara, twilio] = await Promise.all([startCamaraSimulator(), startTwilioSimulator()]);
});
afterAll(() => Promise.all([camara?.close(), twilio?.close()]));
afterEach(() => {
  camara.setOptions({ fault: null, faultsByNumber: {}, outage: false, tokenOutage: false });
  twilio.setOptions({ fault: null, faultsByNumber: {}, outage: false, simSwapDateWithheld: false });
});

describe('the CAMARA SimSwap adapter against its simulator', () => {
  let adapter: CamaraSimSwapAdapter;
  beforeEach(() => {
    adapter = new CamaraSimSwapAdapter(
      { key: CAMARA_SIMULATOR_DEFAULTS.clientId, secret: CAMARA_SIMULATOR_DEFAULTS.clientSecret },
      new ResilientUpstream('operator', camara.url, POLICIES),
      new ResilientUpstream('operator', camara.tokenUrl, POLICIES),
    );
    camara.resetStats();
  });
  afterEach(() => adapter.onModuleDestroy());

  const swap = async (e164: string, window_hours = 168) => (await adapter.answer('sim_swap', e164, 'interactive', { window_hours })).fields;

  it('reads the date of the last SIM change from retrieve-date, and whether it is within the window: one request each, one token for all', async () => {
    const recent = await swap(RECENT);
    expect(recent.sim_swapped).toBe(true);
    expect(Date.now() - Date.parse(recent.last_sim_swap_at as string)).toBeGreaterThanOrEqual(2 * 3_600_000 - 60_000);
    await expect(swap(HUNDRED_HOURS, 168)).resolves.toMatchObject({ sim_swapped: true });
    await expect(swap(HUNDRED_HOURS, 72)).resolves.toMatchObject({ sim_swapped: false });
    await expect(swap(LONG_AGO, 2400)).resolves.toMatchObject({ sim_swapped: false, last_sim_swap_at: expect.any(String) });
    expect(camara.stats().byPath).toEqual({ '/oauth2/token': 1, '/sim-swap/v2/retrieve-date': 4 });
    expect(adapter.tokensFetched).toBe(1);
  });

  it('asks check with maxAge = the window when the operator keeps the date back, and trusts a monitoredPeriod that covers the window', async () => {
    camara.setOptions({ fault: 'date-withheld-unmonitored' });
    await expect(swap(HUNDRED_HOURS, 120)).resolves.toEqual({ sim_swapped: true, last_sim_swap_at: null });
    await expect(swap(HUNDRED_HOURS, 72)).resolves.toEqual({ sim_swapped: false, last_sim_swap_at: null });
    expect(camara.stats().maxAges).toEqual([120, 72]);
    // A change older than the 5 monitored days: null with monitoredPeriod 5 (120 h) answers a 72-hour window alone.
    camara.setOptions({ fault: 'date-withheld' });
    camara.resetStats();
    await expect(swap(LONG_AGO, 72)).resolves.toEqual({ sim_swapped: false, last_sim_swap_at: null });
    expect(camara.stats().byPath).toEqual({ '/sim-swap/v2/retrieve-date': 1 });
  });

  it('fetches a new token when the operator refuses the held one (401), and asks once more', async () => {
    await swap(RECENT);
    camara.revokeTokens();
    await expect(swap(RECENT)).resolves.toMatchObject({ sim_swapped: true });
    expect(adapter.tokensFetched).toBe(2);
  });

  it.each([
    ['http-404', 'no_coverage'],
    ['http-422', 'no_coverage'],
    ['no-time-zone', 'invalid_answer'],
    ['wrong-type', 'invalid_answer'],
    ['http-403', 'http_403'],
  ] as const)('a %s is a refundable failure of kind %s', async (fault, kind) => {
    camara.setOptions({ fault });
    await expect(adapter.answer('sim_swap', RECENT, 'interactive', { window_hours: 168 })).rejects.toMatchObject({ kind });
  });

  it('an unknown client is refused as unauthorized, and the token endpoint is what /health/ready probes', async () => {
    const stranger = new CamaraSimSwapAdapter(
      { key: 'nobody', secret: 'wrong' },
      new ResilientUpstream('operator', camara.url, POLICIES),
      new ResilientUpstream('operator', camara.tokenUrl, POLICIES),
    );
    try {
      await expect(stranger.answer('sim_swap', RECENT, 'interactive', { window_hours: 168 })).rejects.toMatchObject({ reason: 'unauthorized' });
      await expect(stranger.ping()).rejects.toMatchObject({ reason: 'unauthorized' });
      await expect(adapter.ping()).resolves.toBeUndefined();
    } finally {
      stranger.onModuleDestroy();
    }
  });
});

describe("Twilio Lookup's sim_swap package", () => {
  let adapter: TwilioLookupAdapter;
  beforeEach(() => {
    adapter = new TwilioLookupAdapter({ baseUrl: twilio.url, key: TWILIO_SIMULATOR_DEFAULTS.key, secret: TWILIO_SIMULATOR_DEFAULTS.secret }, new ResilientUpstream('twilio', twilio.url, POLICIES));
  });
  afterEach(() => adapter.onModuleDestroy());

  it('reads last_sim_swap_date against the window, and swapped_in_period over swapped_period when the date is kept back', async () => {
    await expect(adapter.answer('sim_swap', HUNDRED_HOURS, 'interactive', { window_hours: 168 })).resolves.toMatchObject({ fields: { sim_swapped: true, last_sim_swap_at: expect.any(String) } });
    await expect(adapter.answer('sim_swap', HUNDRED_HOURS, 'interactive', { window_hours: 72 })).resolves.toMatchObject({ fields: { sim_swapped: false } });
    twilio.setOptions({ simSwapDateWithheld: true });
    // Changed 2 h ago, swapped_in_period over PT24H: within any window of 24 h or more.
    await expect(adapter.answer('sim_swap', RECENT, 'interactive', { window_hours: 168 })).resolves.toMatchObject({ fields: { sim_swapped: true, last_sim_swap_at: null } });
    // Changed 100 h ago: not within PT24H, which says nothing of a 168-hour window (not known, never guessed).
    await expect(adapter.answer('sim_swap', HUNDRED_HOURS, 'interactive', { window_hours: 168 })).resolves.toMatchObject({ fields: { sim_swapped: null, last_sim_swap_at: null } });
  });

  it('an unreadable date is refunded, never guessed', async () => {
    twilio.setOptions({ fault: 'unknown-word' });
    await expect(adapter.answer('sim_swap', RECENT, 'interactive', { window_hours: 168 })).rejects.toMatchObject({ kind: 'invalid_answer' });
  });
});

describe('failover between the two SIM swap upstreams', () => {
  it('the operator (CAMARA) down: Twilio answers; Twilio down: the operator answers', async () => {
    const providers = await startProviderModule({ LOOKUP_PROVIDERS: 'operator,twilio', ...camaraEnv('operator', camara), ...twilioEnv('twilio', twilio) });
    try {
      const ask = (e164: string) => providers.lookups.lookUp(e164, { sim_swap: true }, { maxAgeSeconds: 0, checkOptions: { sim_swap: { window_hours: 168 } } });
      await expect(ask(RECENT)).resolves.toMatchObject({ answers: { sim_swap: { provider: 'operator', fields: { sim_swapped: true } } } });
      camara.setOptions({ outage: true });
      await expect(ask(RECENT)).resolves.toMatchObject({ answers: { sim_swap: { provider: 'twilio', fields: { sim_swapped: true } } } });
      camara.setOptions({ outage: false });
      // A number the operator does not serve (404 IDENTIFIER_NOT_FOUND) is asked of Twilio too.
      camara.setOptions({ faultsByNumber: { [HUNDRED_HOURS]: 'http-404' } });
      await expect(ask(HUNDRED_HOURS)).resolves.toMatchObject({ answers: { sim_swap: { provider: 'twilio' } } });
    } finally {
      await providers.close();
    }
    const reversed = await startProviderModule({ LOOKUP_PROVIDERS: 'twilio,operator', ...camaraEnv('operator', camara), ...twilioEnv('twilio', twilio) });
    try {
      twilio.setOptions({ outage: true });
      await expect(reversed.lookups.lookUp(RECENT, { sim_swap: true }, { checkOptions: { sim_swap: { window_hours: 168 } } })).resolves.toMatchObject({
        answers: { sim_swap: { provider: 'operator', fields: { sim_swapped: true } } },
      });
    } finally {
      await reversed.close();
    }
  });
});

describe('the SIM swap check through the API (CAMARA first, Twilio behind it)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ ADMIN_TOKEN, LOOKUP_PROVIDERS: 'operator,twilio', ...camaraEnv('operator', camara), ...twilioEnv('twilio', twilio) });
  });
  afterAll(() => t?.close());

  const settings = (account: TestAccount) => request(t.http).get('/api/v1/settings').set(account.auth).expect(200);
  const patch = (account: TestAccount, body: object) => request(t.http).patch('/api/v1/settings').set(account.auth).send(body);
  const balance = async (account: TestAccount) => (await request(t.http).get('/api/v1/balance').set(account.auth).expect(200)).body.balance as number;

  it('is off by default with its window option at its default; a window is set, validated (400 naming it) and reset', async () => {
    const account = await createAccount(t, { credits: 100 });
    const before = (await settings(account)).body;
    expect(before.checks).toMatchObject({ sim_swap: false });
    expect(before.check_options).toEqual({ sim_swap: { window_hours: 168 } });

    const set = await patch(account, { checks: { sim_swap: true }, check_options: { sim_swap: { window_hours: 72 } } }).expect(200);
    expect(set.body).toMatchObject({ checks: { sim_swap: true }, cost_per_call: 4 + 3, check_options: { sim_swap: { window_hours: 72 } } });

    for (const [bad, named] of [
      [{ sim_swap: { window_hours: 0 } }, 'check_options.sim_swap.window_hours must be an integer from 1 to 2400'],
      [{ sim_swap: { window_hours: 2401 } }, 'check_options.sim_swap.window_hours must be an integer from 1 to 2400'],
      [{ sim_swap: { window_hours: 'a week' } }, 'check_options.sim_swap.window_hours must be an integer from 1 to 2400'],
      [{ sim_swap: { window: 72 } }, 'unknown field "check_options.sim_swap.window"'],
      [{ line_type: { window_hours: 72 } }, 'check_options.line_type: the check line_type has no options'],
    ] as const) {
      const refused = await patch(account, { check_options: bad });
      expectError(refused, 400, 'INVALID_REQUEST');
      expect(refused.body.error.message).toContain(named);
    }
    expect((await settings(account)).body.check_options).toEqual({ sim_swap: { window_hours: 72 } });
    await patch(account, { check_options: { sim_swap: { window_hours: null } } }).expect(200);
    expect((await settings(account)).body.check_options).toEqual({ sim_swap: { window_hours: 168 } });
  });

  it('the admin API sets an account\'s window with the same rule, in the audit trail', async () => {
    const account = await createAccount(t, { credits: 10 });
    const admin = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const refused = await request(t.http).patch(`/admin/v1/accounts/${account.id}/settings`).set(admin).send({ check_options: { sim_swap: { window_hours: 9999 } } });
    expectError(refused, 400, 'INVALID_REQUEST');
    expect(refused.body.error.message).toContain('check_options.sim_swap.window_hours');
    const set = await request(t.http).patch(`/admin/v1/accounts/${account.id}/settings`).set(admin).send({ check_options: { sim_swap: { window_hours: 24 } } }).expect(200);
    expect(set.body.settings.check_options).toEqual({ sim_swap: { window_hours: 24 } });
    expect((await settings(account)).body.check_options).toEqual({ sim_swap: { window_hours: 24 } });
  });

  it('/filter keeps its six fields and charges the check; the answer is cached per window, and the risk verdict reads it (RECENT_SIM_SWAP)', async () => {
    const account = await createAccount(t, { credits: 100 });
    await patch(account, { checks: { sim_swap: true } }).expect(200);
    camara.resetStats();
    const answered = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: RECENT }).expect(200);
    expect(Object.keys(answered.body).sort()).toEqual(SIX_FIELDS);
    expect(await balance(account)).toBe(100 - 7);
    expect(camara.stats().byPath['/sim-swap/v2/retrieve-date']).toBe(1);
    // The same window: from the cache. Another window: asked again.
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: RECENT }).expect(200);
    expect(camara.stats().byPath['/sim-swap/v2/retrieve-date']).toBe(1);
    await patch(account, { check_options: { sim_swap: { window_hours: 1 } } }).expect(200);
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: RECENT }).expect(200);
    expect(camara.stats().byPath['/sim-swap/v2/retrieve-date']).toBe(2);

    const verdict = await request(t.http).post('/api/v1/risk').set(account.auth).send({ phone: RECENT, event: 'login' }).expect(200);
    expect(verdict.body.reasons.map((reason: { code: string }) => reason.code)).toContain('RECENT_SIM_SWAP');
    expect(verdict.body.recommendation).toBe('block');
  });

  it('bulk results and the CSV carry sim_swapped and last_sim_swap_at for a job with the check on, and not for one without', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await patch(account, { checks: { sim_swap: true }, check_options: { sim_swap: { window_hours: 72 } } }).expect(200);
    const phones = [RECENT, HUNDRED_HOURS, LONG_AGO];
    const accepted = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones }).expect(202);
    const done = await waitForBulkJob(t.http, account.auth, accepted.body.id);
    const byPhone = Object.fromEntries((done.results as Array<{ phone: string; result: Record<string, unknown> }>).map((entry) => [entry.phone, entry.result]));
    expect(byPhone[RECENT]).toMatchObject({ sim_swapped: true, last_sim_swap_at: expect.any(String) });
    expect(byPhone[HUNDRED_HOURS]).toMatchObject({ sim_swapped: false });
    expect(byPhone[LONG_AGO]).toMatchObject({ sim_swapped: false });
    const csv = csvRecords((await request(t.http).get(`/api/v1/filter/bulk/${accepted.body.id}/results.csv`).set(account.auth).expect(200)).text);
    expect(csv.header).toEqual([
      'phone', 'reference', 'country', 'valid', 'status', 'carrier', 'line_type', 'is_ported', 'sim_swapped', 'last_sim_swap_at',
      'error_code', 'error_message', 'network_status_provider', 'network_status_observed_at', 'sim_swap_provider', 'sim_swap_observed_at',
    ]);
    expect(csv.rows.map((row) => [row.phone, row.sim_swapped, row.sim_swap_provider])).toEqual([
      [RECENT, 'true', 'operator'],
      [HUNDRED_HOURS, 'false', 'operator'],
      [LONG_AGO, 'false', 'operator'],
    ]);

    await patch(account, { checks: { sim_swap: false } }).expect(200);
    const without = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: [RECENT] }).expect(202);
    const plain = await waitForBulkJob(t.http, account.auth, without.body.id);
    expect(Object.keys((plain.results as Array<{ result: object }>)[0].result).sort()).toEqual(SIX_FIELDS);
    const plainCsv = csvRecords((await request(t.http).get(`/api/v1/filter/bulk/${without.body.id}/results.csv`).set(account.auth).expect(200)).text);
    expect(plainCsv.header).not.toContain('sim_swapped');
    expect(plainCsv.header).not.toContain('last_sim_swap_at');
  });
});

describe('a deployment whose providers do not offer SIM swap', () => {
  let hlr: UpstreamSimulator;
  let t: TestApp;
  beforeAll(async () => {
    hlr = await startUpstreamSimulator();
    t = await startTestApp({ PROVIDER: 'hlr-lookups', HLR_LOOKUPS_URL: hlr.url, HLR_LOOKUPS_KEY: 'sim-key', HLR_LOOKUPS_SECRET: 'sim-secret' });
  });
  afterAll(async () => {
    await t?.close();
    await hlr?.close();
  });

  it('refuses to turn it on with a 400 naming the check, and still takes its window', async () => {
    const account = await createAccount(t, { credits: 10 });
    const refused = await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { sim_swap: true } });
    expectError(refused, 400, 'INVALID_REQUEST');
    expect(refused.body.error.message).toContain('checks.sim_swap cannot be turned on: no configured lookup provider offers it');
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ check_options: { sim_swap: { window_hours: 48 } } }).expect(200);
  });
});
