import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { startTwilioSimulator, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { startTestApp, TestApp } from './helpers/test-app';
import { CHECKS_BOTH_UPSTREAMS_OFFER, twoUpstreamsEnv } from './provider-helpers';

/** network_status (4) + line_type (1). */
const COST = 5;

type UsageEntry = { type: string; answered_by: Record<string, { provider: string }> | null };

/**
 * One meaning whichever provider answers (issue 37), over HTTP with the ledger: Twilio Lookup asked
 * first (`backup`), hlr-lookups second (`primary`), each against its simulator. Twilio's own validity
 * verdict never charges an ABSENT nobody looked up, and an answer Twilio cannot give for a number goes
 * to the next provider before anything is refunded; the customer is charged once either way.
 */
describe('a provider’s verdicts and gaps over HTTP: charged once, or refunded', () => {
  let hlr: UpstreamSimulator;
  let twilio: TwilioSimulator;
  let t: TestApp;
  let account: TestAccount;
  let block = 70;
  const fresh = () => distinctNumbers(1, block++)[0];

  beforeAll(async () => {
    [hlr, twilio] = await Promise.all([startUpstreamSimulator(), startTwilioSimulator()]);
    t = await startTestApp(twoUpstreamsEnv(hlr.url, twilio.url, { LOOKUP_PROVIDERS: 'backup,primary', PROVIDER_TIMEOUT_MS: '3000' }));
    account = await createAccount(t, { credits: 10_000 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send(CHECKS_BOTH_UPSTREAMS_OFFER).expect(200);
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([hlr?.close(), twilio?.close()]);
  });
  afterEach(() => {
    hlr.setOptions({ fault: null });
    twilio.setOptions({ fault: null, canadaAuthorized: true });
  });

  const balance = async () => (await request(t.http).get('/api/v1/balance').set(account.auth).expect(200)).body.balance as number;
  const filter = (phone: string) => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone });
  const lastCharge = async (): Promise<UsageEntry> =>
    ((await request(t.http).get('/api/v1/usage?limit=20').set(account.auth).expect(200)).body.entries as UsageEntry[]).find((row) => row.type === 'CHARGE')!;
  const providersOf = (entry: UsageEntry) => Object.fromEntries(Object.entries(entry.answered_by ?? {}).map(([check, origin]) => [check, origin.provider]));
  const asked = () => ({ twilio: twilio.stats().requests, hlr: hlr.stats().requests });
  const resetStats = () => {
    twilio.resetStats();
    hlr.resetStats();
  };

  it('Twilio says valid: false but answers a line status: answered from that status (not ABSENT), charged once, nobody else asked', async () => {
    twilio.setOptions({ fault: 'invalid-verdict' });
    resetStats();
    const before = await balance();
    const res = await filter(fresh()).expect(200);
    expect(res.body).toMatchObject({ valid: true, status: 'CONNECTED', line_type: 'MOBILE' });
    expect(before - (await balance())).toBe(COST);
    expect(providersOf(await lastCharge())).toEqual({ network_status: 'backup', line_type: 'backup' });
    expect(asked()).toEqual({ twilio: 2, hlr: 0 });
  });

  it('Twilio says valid: false and looked nothing up: not charged as ABSENT; the next provider answers, charged once', async () => {
    twilio.setOptions({ fault: 'invalid-verdict-no-data' });
    resetStats();
    const before = await balance();
    const res = await filter(fresh()).expect(200);
    expect(res.body).toMatchObject({ valid: true, status: 'CONNECTED', carrier: expect.any(String), line_type: 'MOBILE' });
    expect(before - (await balance())).toBe(COST);
    expect(providersOf(await lastCharge())).toEqual({ network_status: 'primary', line_type: 'primary' });
    expect(asked()).toEqual({ twilio: 2, hlr: 2 });
  });

  it('a Canadian line type Twilio may not answer (60601) goes to hlr-lookups, charged once, counted as no_coverage', async () => {
    twilio.setOptions({ canadaAuthorized: false });
    resetStats();
    const before = await balance();
    await filter('+14162345678').expect(200);
    expect(before - (await balance())).toBe(COST);
    expect(providersOf(await lastCharge())).toEqual({ network_status: 'backup', line_type: 'primary' });
    const metrics = (await request(t.http).get('/metrics').expect(200)).text;
    const row = metrics.split('\n').find((line) => line.startsWith('phone_filter_provider_failures_total{provider="backup",check="line_type",reason="no_coverage"}'));
    expect(Number(row?.split(' ')[1])).toBeGreaterThan(0);
  });

  it('neither can answer (Twilio outside its coverage, 60610; hlr-lookups rejects the lookup): 503, refunded', async () => {
    twilio.setOptions({ fault: 'error-60610' });
    hlr.setOptions({ fault: 'rejected' });
    resetStats();
    const before = await balance();
    const res = await filter(fresh()).expect(503);
    expect(res.body.error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(await balance()).toBe(before);
    expect(asked().hlr).toBeGreaterThan(0);
  });
});
