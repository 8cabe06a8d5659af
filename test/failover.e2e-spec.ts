import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { startTwilioSimulator, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { distinctNumbers, waitForBulkJob } from './helpers/bulk';
import { waitForRound } from './helpers/watchlists';
import { startTestApp, TestApp } from './helpers/test-app';
import { CHECKS_BOTH_UPSTREAMS_OFFER, twoUpstreamsEnv } from './provider-helpers';

/** network_status (4) + line_type (1): the checks both upstreams offer. */
const COST = 5;

/**
 * Two real upstreams behind LOOKUP_PROVIDERS (issue 23): hlr-lookups first, Twilio Lookup as the backup,
 * each against its own simulator. A refundable failure of the primary moves the check to the backup;
 * the customer is charged once; 503 (refunded) only when both failed.
 */
describe('failover between two upstreams (LOOKUP_PROVIDERS=primary,backup)', () => {
  let primary: UpstreamSimulator;
  let backup: TwilioSimulator;
  let t: TestApp;
  let account: TestAccount;
  let block = 60;
  const fresh = () => distinctNumbers(1, block++)[0];

  beforeAll(async () => {
    [primary, backup] = await Promise.all([startUpstreamSimulator(), startTwilioSimulator()]);
    t = await startTestApp(
      twoUpstreamsEnv(primary.url, backup.url, {
        PROVIDER_BREAKER_MIN_CALLS: '12',
        PROVIDER_BREAKER_WINDOW_MS: '10000',
        PROVIDER_BREAKER_HALF_OPEN_MS: '60000',
      }),
    );
    account = await createAccount(t, { credits: 10_000 });
    await request(t.http)
      .patch('/api/v1/settings')
      .set(account.auth)
      .send(CHECKS_BOTH_UPSTREAMS_OFFER)
      .expect(200);
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([primary?.close(), backup?.close()]);
  });
  afterEach(() => {
    primary.setOptions({ outage: false, fault: null });
    backup.setOptions({ outage: false, fault: null });
  });

  const balance = async () => (await request(t.http).get('/api/v1/balance').set(account.auth).expect(200)).body.balance as number;
  const filter = (phone: string) => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone });
  const resetStats = () => {
    primary.resetStats();
    backup.resetStats();
  };

  it('the primary answers while it is healthy; the backup is not asked', async () => {
    resetStats();
    const before = await balance();
    const res = await filter(fresh()).expect(200);
    expect(res.body).toMatchObject({ status: 'CONNECTED', line_type: 'MOBILE' });
    expect(primary.stats().requests).toBe(2);
    expect(backup.stats().requests).toBe(0);
    expect(before - (await balance())).toBe(COST);
  });

  it.each([
    ['down (HTTP 503 outage)', { outage: true }],
    ['answering 5xx', { fault: 'http-500' as const }],
    ['timing out', { fault: 'slow' as const }],
  ])('primary %s: 200 from the backup, charged once', async (_, fault) => {
    primary.setOptions(fault);
    resetStats();
    const before = await balance();
    const res = await filter(fresh()).expect(200);
    expect(res.body).toMatchObject({ status: 'CONNECTED', line_type: 'MOBILE' });
    expect(primary.stats().requests).toBe(2); // tried first (its breaker still closed)
    expect(backup.stats().requests).toBe(2);
    expect(before - (await balance())).toBe(COST);
  });

  it('primary breaker open: skipped without a request, answered by the backup', async () => {
    // Both down while the primary's breaker opens: the primary is asked whatever its rank.
    primary.setOptions({ outage: true });
    backup.setOptions({ outage: true });
    const providers = async () => {
      const health = (await request(t.http).get('/health/ready')).body;
      return (health.info ?? health.error ?? health.details).provider.providers as Array<{ provider: string; circuit?: { interactive: string } }>;
    };
    backup.setOptions({ outage: false }); // /health/ready answers 503 (with no detail) while both are down
    for (let i = 0; i < 12 && (await providers())[0].circuit?.interactive !== 'open'; i++) {
      backup.setOptions({ outage: true });
      await filter(fresh()).expect(503);
      backup.setOptions({ outage: false });
    }
    const entries = await providers();
    expect(entries.map((entry) => entry.provider)).toEqual(['primary', 'backup']);
    expect(entries[0].circuit?.interactive).toBe('open');

    primary.setOptions({ outage: false });
    resetStats();
    await filter(fresh()).expect(200);
    expect(primary.stats().requests).toBe(0);
    expect(backup.stats().requests).toBe(2);
  });

  it('both down: 503 PROVIDER_UNAVAILABLE, refunded', async () => {
    primary.setOptions({ outage: true });
    backup.setOptions({ outage: true });
    const before = await balance();
    const res = await filter(fresh()).expect(503);
    expect(res.body.error.code).toBe('PROVIDER_UNAVAILABLE');
    expect(await balance()).toBe(before);
  });

  it('counts the failovers per provider in /metrics', async () => {
    const text = (await request(t.http).get('/metrics').expect(200)).text;
    const line = text.split('\n').find((row) => row.startsWith('phone_filter_upstream_failovers_total{provider="primary"}'));
    expect(Number(line?.split(' ')[1])).toBeGreaterThan(0);
    // Per provider and reason: the open breaker's refusals are failures of their own (no request sent).
    const refused = text.split('\n').find((row) => row.startsWith('phone_filter_provider_failures_total{provider="primary",check="network_status",reason="circuit_open"}'));
    expect(Number(refused?.split(' ')[1])).toBeGreaterThan(0);
  });
});

describe('routing rules (LOOKUP_ROUTING): per calling code, per check, and the residency allow-list', () => {
  let primary: UpstreamSimulator;
  let backup: TwilioSimulator;
  let t: TestApp;
  let account: TestAccount;

  beforeAll(async () => {
    [primary, backup] = await Promise.all([startUpstreamSimulator(), startTwilioSimulator()]);
    t = await startTestApp(
      twoUpstreamsEnv(primary.url, backup.url, {
        LOOKUP_ROUTING: JSON.stringify({
          countries: { '1': ['backup'] },
          checks: { line_type: ['backup'] },
          residency: { '49': ['primary'], '33': [] },
        }),
      }),
    );
    account = await createAccount(t, { credits: 10_000 });
    await request(t.http)
      .patch('/api/v1/settings')
      .set(account.auth)
      .send(CHECKS_BOTH_UPSTREAMS_OFFER)
      .expect(200);
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([primary?.close(), backup?.close()]);
  });
  afterEach(() => primary.setOptions({ outage: false }));

  const balance = async () => (await request(t.http).get('/api/v1/balance').set(account.auth).expect(200)).body.balance as number;
  const filter = (phone: string) => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone });
  const asked = async (phone: string, status: number) => {
    primary.resetStats();
    backup.resetStats();
    await filter(phone).expect(status);
    return { primary: primary.stats().requests, backup: backup.stats().requests };
  };

  it('a +1 number goes to the provider its calling code names first, for every check', async () => {
    expect(await asked('+12015550123', 200)).toEqual({ primary: 0, backup: 2 });
  });

  it('elsewhere each check follows its own order: network_status to the primary, line_type to the backup', async () => {
    expect(await asked('+447400123456', 200)).toEqual({ primary: 1, backup: 1 });
  });

  it('a +49 number goes only to the providers allowed for it: with the primary down, 503 refunded, the backup never asked', async () => {
    primary.setOptions({ outage: true });
    const before = await balance();
    expect(await asked('+4915112345678', 503)).toEqual({ primary: 2, backup: 0 });
    expect(await balance()).toBe(before);
  });

  it('a number no provider is allowed for is sent nowhere: 503 refunded', async () => {
    const before = await balance();
    expect(await asked('+33612345678', 503)).toEqual({ primary: 0, backup: 0 });
    expect(await balance()).toBe(before);
  });
});

describe('a bulk job and a watchlist round during a primary outage', () => {
  let primary: UpstreamSimulator;
  let backup: TwilioSimulator;
  let t: TestApp;
  let account: TestAccount;

  beforeAll(async () => {
    [primary, backup] = await Promise.all([startUpstreamSimulator({ outage: true }), startTwilioSimulator()]);
    const run = Math.random().toString(16).slice(2, 10);
    t = await startTestApp(
      twoUpstreamsEnv(primary.url, backup.url, {
        // Not about timeouts: the backup's simulator answers from this test's process (at 500 ms, lookups
        // of the bulk job timed out in a clean-clone CI run and were refunded instead of answered).
        PROVIDER_TIMEOUT_MS: '10000',
        BULK_QUEUE_NAME: `bulk-failover-${run}`,
        BULK_POLL_INTERVAL_SECONDS: '0.5',
        WATCHLIST_SCHEDULE_GROUP: `failover-${run}`,
        WATCHLIST_POLL_INTERVAL_MS: '100',
      }),
    );
    account = await createAccount(t, { credits: 100_000 });
    await request(t.http)
      .patch('/api/v1/settings')
      .set(account.auth)
      .send(CHECKS_BOTH_UPSTREAMS_OFFER)
      .expect(200);
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([primary?.close(), backup?.close()]);
  });

  it('the bulk job completes with every entry answered (by the backup)', async () => {
    const phones = distinctNumbers(20, 81);
    const job = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones }).expect(202);
    const done = await waitForBulkJob(t.http, account.auth, job.body.id, 30_000);
    expect(done.status).toBe('completed');
    const results = done.results as Array<{ result?: { status: string }; error?: string }>;
    expect(results.map((entry) => entry.result?.status ?? entry.error)).toEqual(Array(20).fill('CONNECTED'));
    expect(backup.stats().requests).toBeGreaterThanOrEqual(40);
  }, 60_000);

  it('the watchlist round completes with every entry answered (by the backup)', async () => {
    const phones = distinctNumbers(5, 82);
    const id = (await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones, interval: 'daily' }).expect(201)).body.id;
    await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    const watchlist = await waitForRound(t.http, account.auth, id, 1);
    expect(watchlist.last_round).toMatchObject({ checked: 5, failed: 0 });
    expect(watchlist.entries.map((entry) => entry.error)).toEqual(Array(5).fill(null));
    expect(watchlist.entries.map((entry) => entry.result?.status)).toEqual(Array(5).fill('CONNECTED'));
  }, 60_000);
});
