import { Logger } from '@nestjs/common';
import request from 'supertest';
import { UpstreamFailure } from '../src/provider/port/upstream-failure';
import { HlrLookupsAdapter } from '../src/provider/adapters/hlr-lookups.adapter';
import { hlrLookupAnswer, mnpLookupAnswer, ntLookupAnswer, UPSTREAM_TIMESTAMP } from '../src/provider/adapters/hlr-lookups.schema';
import { digestHeaders } from '../src/provider/adapters/hlr-lookups.protocol';
import { SimulatedFault, startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';
import { checkFields, hlrLookupsEnv, hlrLookupsAdapter } from './provider-helpers';

/** A plan-valid UK mobile (original operator Three) that is not one of the table's test numbers. */
const NUMBER = '+447400123456';

function adapterFor(sim: UpstreamSimulator, timeoutMs = 1000): HlrLookupsAdapter {
  return hlrLookupsAdapter({ baseUrl: sim.url, key: 'sim-key', secret: 'sim-secret', timeoutMs, retries: 0, breaker: { failureRate: 0.99, windowMs: 1000, minCalls: 100000, halfOpenMs: 1000 }, batchSockets: 30 });
}

async function outcome(work: Promise<unknown>): Promise<unknown> {
  return work.then(
    (answer) => answer,
    (error: unknown) => (error instanceof UpstreamFailure ? `fail:${error.reason}:${error.kind}` : `fail:${(error as { reason?: string }).reason}`),
  );
}

async function signedGet(sim: UpstreamSimulator, path: string) {
  return fetch(`${sim.url}${path}`, { headers: digestHeaders({ key: 'sim-key', secret: 'sim-secret' }, path, 'GET', '') });
}

describe('upstream simulator: documented fields and formats', () => {
  let sim: UpstreamSimulator;
  beforeAll(async () => (sim = await startUpstreamSimulator()));
  afterAll(() => sim.close());

  async function lookup(path: string, body: object): Promise<Record<string, unknown>> {
    const text = JSON.stringify(body);
    const res = await fetch(`${sim.url}${path}`, {
      method: 'POST',
      body: text,
      headers: { 'Content-Type': 'application/json', ...digestHeaders({ key: 'sim-key', secret: 'sim-secret' }, path, 'POST', text) },
    });
    expect(res.status).toBe(200);
    return (await res.json()) as Record<string, unknown>;
  }

  it('answers HLR lookups with every documented field, in the documented formats', async () => {
    const answer = await lookup('/hlr-lookup', { msisdn: TEST_NUMBERS.ported });
    expect(hlrLookupAnswer.parse(answer)).toBeTruthy();
    expect(answer).toMatchObject({
      connectivity_status: 'CONNECTED',
      processing_status: 'COMPLETED',
      error_code: null,
      mccmnc: expect.stringMatching(/^234\d{2,3}$/),
      mcc: '234',
      imsi: '*'.repeat(15),
      original_network_name: 'Three',
      original_country_name: 'United Kingdom',
      original_country_code: 'GB',
      original_country_prefix: '+44',
      is_ported: true,
      ported_network_name: expect.any(String),
      is_roaming: false,
      roaming_network_name: null,
      cost: '0.0100',
      data_source: 'LIVE_HLR',
    });
    expect(answer.timestamp).toMatch(UPSTREAM_TIMESTAMP);
    expect(answer.timestamp).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}\+0000$/);
    expect(answer.storage).toMatch(/^SYNC-API-\d{4}-\d{2}$/);
  });

  it('answers NT lookups with regions, time zones, HLR qualification and cost', async () => {
    const answer = await lookup('/nt-lookup', { number: '+4989702626' });
    expect(ntLookupAnswer.parse(answer)).toBeTruthy();
    expect(answer).toMatchObject({
      number_type: 'LANDLINE',
      query_status: 'OK',
      is_valid: true,
      invalid_reason: null,
      qualifies_for_hlr_lookup: false,
      original_country_name: 'Germany',
      regions: ['Munich'],
      timezones: ['Europe/Berlin'],
      cost: '0.0050',
    });
  });

  it('answers MNP lookups with the upstream’s routing suffix on operator names, country fields and error_code', async () => {
    const answer = await lookup('/mnp-lookup', { msisdn: NUMBER });
    expect(mnpLookupAnswer.parse(answer)).toBeTruthy();
    expect(answer).toMatchObject({
      query_status: 'OK',
      is_ported: false,
      original_network_name: expect.stringMatching(/^Three:\d{4} - SVR\/2$/),
      original_country_code: 'GB',
      ported_network_name: null,
      error_code: null,
      cost: '0.0050',
    });
  });

  it('serves GET /balance (signed), /ping and /time (unsigned, as the PHP SDK asks /time before signing)', async () => {
    const balance = await signedGet(sim, '/balance');
    expect(balance.status).toBe(200);
    expect(await balance.json()).toEqual({ balance: expect.stringMatching(/^\d+\.\d{4}$/) });
    expect((await fetch(`${sim.url}/balance`)).status).toBe(401);
    expect(await (await fetch(`${sim.url}/ping`)).json()).toEqual({ success: true });
    const { time } = (await (await fetch(`${sim.url}/api/v2/time`)).json()) as { time: number };
    expect(Math.abs(time - Date.now() / 1000)).toBeLessThan(5);
  });
});

describe('hlr-lookups adapter: each documented failure, played by the simulator', () => {
  let sim: UpstreamSimulator;
  let adapter: HlrLookupsAdapter;
  let logged: jest.SpyInstance;
  beforeAll(async () => (sim = await startUpstreamSimulator()));
  afterAll(() => sim.close());
  beforeEach(() => {
    sim.setOptions({ fault: null, faultsByNumber: {}, rateLimit: null, slowMs: 10_000 });
    adapter = adapterFor(sim);
    logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });
  afterEach(() => {
    adapter.onModuleDestroy();
    logged.mockRestore();
  });

  const CASES: Array<[SimulatedFault, unknown, unknown, unknown]> = [
    ['rejected', 'fail:upstream_error:processing_rejected', 'fail:upstream_error:query_failed', 'fail:upstream_error:query_failed'],
    ['failed', 'fail:upstream_error:processing_failed', 'fail:upstream_error:query_failed', 'fail:upstream_error:query_failed'],
    ['error-code', { status: 'UNDETERMINED', carrier: 'Three' }, { line_type: 'MOBILE' }, { is_ported: false, carrier: 'Three' }],
    ['roaming', { status: 'CONNECTED', carrier: 'Three' }, { line_type: 'MOBILE' }, { is_ported: false, carrier: 'Three' }],
    // NT's own verdict that a number its plan accepts is invalid, with no type: refunded (the next provider asked), never a charged UNKNOWN.
    ['invalid-verdict', { status: 'CONNECTED', carrier: 'Three' }, 'fail:upstream_error:no_coverage', { is_ported: false, carrier: 'Three' }],
    ['missing-field', 'fail:upstream_error:invalid_answer', 'fail:upstream_error:invalid_answer', 'fail:upstream_error:invalid_answer'],
    ['wrong-type', 'fail:upstream_error:invalid_answer', 'fail:upstream_error:invalid_answer', 'fail:upstream_error:invalid_answer'],
    ['partial', 'fail:upstream_error:invalid_answer', 'fail:upstream_error:invalid_answer', 'fail:upstream_error:invalid_answer'],
    ['http-400', 'fail:upstream_error:http_400', 'fail:upstream_error:http_400', 'fail:upstream_error:http_400'],
    ['http-401', 'fail:unauthorized:http_401', 'fail:unauthorized:http_401', 'fail:unauthorized:http_401'],
    ['http-402', 'fail:upstream_error:http_402', 'fail:upstream_error:http_402', 'fail:upstream_error:http_402'],
    ['http-403', 'fail:unauthorized:http_403', 'fail:unauthorized:http_403', 'fail:unauthorized:http_403'],
    ['http-404', 'fail:upstream_error:http_404', 'fail:upstream_error:http_404', 'fail:upstream_error:http_404'],
    ['http-500', 'fail:upstream_error:http_500', 'fail:upstream_error:http_500', 'fail:upstream_error:http_500'],
    ['http-503', 'fail:upstream_error:http_503', 'fail:upstream_error:http_503', 'fail:upstream_error:http_503'],
    ['slow', 'fail:timeout', 'fail:timeout', 'fail:timeout'],
  ];

  it.each(CASES)('%s, for one number only: network %p, type %p, portability %p', async (fault, network, type, portability) => {
    sim.setOptions({ faultsByNumber: { [NUMBER]: fault }, slowMs: 3000 });
    adapter = adapterFor(sim, 300);
    expect(await outcome(checkFields(adapter, 'network_status', NUMBER))).toEqual(network);
    expect(await outcome(checkFields(adapter, 'line_type', NUMBER))).toEqual(type);
    expect(await outcome(checkFields(adapter, 'portability', NUMBER))).toEqual(portability);
    // Other numbers are untouched by a fault set for one number.
    await expect(checkFields(adapter, 'network_status', '+447400125555')).resolves.toEqual({ status: 'CONNECTED', carrier: 'Three' });
  });

  it('counts an error_code on a completed answer, and the upstream cost of every answered lookup', async () => {
    sim.setOptions({ fault: 'error-code' });
    await checkFields(adapter, 'network_status', NUMBER);
    await checkFields(adapter, 'portability', NUMBER);
    expect(adapter.tally.failureCounts()).toEqual([
      { path: '/hlr-lookup', kind: 'error_code', count: 1 },
      { path: '/mnp-lookup', kind: 'error_code', count: 1 },
    ]);
    expect(Object.fromEntries(adapter.tally.costByPath())).toEqual({ '/hlr-lookup': 0.01, '/mnp-lookup': 0.005 });
  });

  it('honours the upstream’s limit: after a 429 it sends nothing until Retry-After has passed', async () => {
    sim.setOptions({ rateLimit: { requests: 2, windowSeconds: 1 } });
    await checkFields(adapter, 'network_status', NUMBER);
    await checkFields(adapter, 'network_status', NUMBER);
    expect(await outcome(checkFields(adapter, 'network_status', NUMBER))).toBe('fail:upstream_error:rate_limited');
    const sent = sim.stats().requests;
    expect(await outcome(checkFields(adapter, 'portability', NUMBER))).toBe('fail:upstream_error:rate_limit_wait');
    expect(sim.stats().requests).toBe(sent);
    expect(sim.stats().byStatus['429']).toBe(1);
    const answer = await eventually(() => outcome(checkFields(adapter, 'network_status', NUMBER)), (value) => typeof value === 'object', 5000, 100);
    expect(answer).toEqual({ status: 'CONNECTED', carrier: 'Three' });
  });

  it('answers 429 with a Retry-After of whole seconds up to the end of the window', async () => {
    sim.setOptions({ rateLimit: { requests: 1, windowSeconds: 30 } });
    expect((await signedGet(sim, '/balance')).status).toBe(200);
    const limited = await signedGet(sim, '/balance');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(30);
    expect(await limited.json()).toEqual({ errors: [{ code: 'TOO_MANY_REQUESTS', message: expect.any(String) }] });
  });
});

describe('POST /api/v1/filter over hlr-lookups: a failed upstream lookup is never a charged answer', () => {
  let sim: UpstreamSimulator;
  let t: TestApp;
  beforeAll(async () => {
    sim = await startUpstreamSimulator();
    t = await startTestApp(hlrLookupsEnv(sim.url, { CACHE_TTL_PORTABILITY_SECONDS: '0', CACHE_TTL_NETWORK_STATUS_SECONDS: '0' }));
  });
  afterAll(async () => {
    await t.close();
    await sim.close();
  });

  beforeEach(() => sim.setOptions({ fault: null, faultsByNumber: {} }));

  async function portabilityOnly() {
    const account = await createAccount(t, { credits: 100 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { network_status: false, portability: true } }).expect(200);
    return account;
  }

  /** One sample of /metrics (0 when the series is not there yet): tests compare before and after. */
  async function metric(series: string): Promise<number> {
    const text = (await request(t.http).get('/metrics').expect(200)).text;
    const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
    return line === undefined ? 0 : Number(line.slice(series.length + 1));
  }
  const MNP_QUERY_FAILED = 'phone_filter_upstream_errors_total{provider="hlr-lookups",endpoint="/mnp-lookup",kind="query_failed"}';
  const MNP_COST = 'phone_filter_upstream_cost_total{provider="hlr-lookups",endpoint="/mnp-lookup"}';

  it('refunds an MNP query_status FAILED: 503 PROVIDER_UNAVAILABLE, balance unchanged, counted in /metrics', async () => {
    const account = await portabilityOnly();
    const failedBefore = await metric(MNP_QUERY_FAILED);
    sim.setOptions({ faultsByNumber: { [NUMBER]: 'failed' } });
    const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: NUMBER });
    expectError(res, 503, 'PROVIDER_UNAVAILABLE');
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 } });
    expect(await metric(MNP_QUERY_FAILED)).toBe(failedBefore + 1);
  });

  it('shows the ported-to brand, not the upstream’s suffixed operator name, and reports its cost in /metrics', async () => {
    const account = await portabilityOnly();
    const costBefore = await metric(MNP_COST);
    const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.ported }).expect(200);
    // A UK number of Three's, ported: the simulator's MNP answer names "EE:<digits> - SVR/2" (tools/upstream-simulator).
    expect(res.body).toMatchObject({ is_ported: true, carrier: 'EE' });
    expect(await metric(MNP_COST)).toBeCloseTo(costBefore + 0.005, 9);
  });
});
