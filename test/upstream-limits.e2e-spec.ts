import request from 'supertest';
import { UpstreamFailure } from '../src/provider/port/upstream-failure';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';
import { checkFields, hlrLookupsAdapter, hlrLookupsEnv } from './provider-helpers';

const MiB = 1024 * 1024;
/** What the giant answer would be: far more than any socket buffer between the two ends. */
const GIANT_BYTES = 64 * MiB;
/** Bytes that may be in flight in socket buffers when the client cuts the stream (loopback, both ends). */
const IN_FLIGHT_SLACK = 8 * MiB;

const failureOf = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error);

/**
 * Issue 24, the review's #6 and the chaos run's 3: an upstream answering 150 MB of valid JSON took the
 * service from 143 MB to 1.41 GB and calls 16.5 s. Answers are read up to PROVIDER_MAX_RESPONSE_BYTES
 * and within the deadline over the whole response; beyond either the call fails, refundable.
 */
describe('upstream answers are capped in bytes and in whole-response time', () => {
  let simulator: UpstreamSimulator;
  beforeAll(async () => {
    simulator = await startUpstreamSimulator({ giantBytes: GIANT_BYTES });
  });
  afterAll(() => simulator.close());
  afterEach(() => simulator.setOptions({ fault: null, slowMs: 10_000 }));

  it('cuts a giant answer off at the cap: the upstream could send only about the cap before the stream was aborted', async () => {
    const adapter = hlrLookupsAdapter({ baseUrl: simulator.url, key: 'sim-key', secret: 'sim-secret', timeoutMs: 20_000, retries: 0, breaker: { failureRate: 0.5, windowMs: 10_000, minCalls: 100, halfOpenMs: 1000 }, maxResponseBytes: MiB });
    try {
      simulator.setOptions({ fault: 'giant' });
      simulator.resetStats();
      const failure = await failureOf(checkFields(adapter, 'network_status', TEST_NUMBERS.connected));
      expect(failure).toBeInstanceOf(UpstreamFailure);
      expect(failure).toMatchObject({ reason: 'upstream_error', kind: 'oversized' });
      // main: every one of the 64 MiB was read (and parsed) before anything was decided
      await eventually(() => simulator.stats().streamsEnded, (ended) => ended >= 1, 30_000, 10); // the simulator noticed the closed socket
      expect(simulator.stats().streamedBytes).toBeLessThan(MiB + IN_FLIGHT_SLACK);
      expect(adapter.tally.failureCounts()).toEqual([{ path: '/hlr-lookup', kind: 'oversized', count: 1 }]);
    } finally {
      adapter.onModuleDestroy();
    }
  });

  it('an answer within the cap is read whole (the padding is an unknown field, ignored)', async () => {
    const adapter = hlrLookupsAdapter({ baseUrl: simulator.url, key: 'sim-key', secret: 'sim-secret', timeoutMs: 5000, retries: 0, breaker: { failureRate: 0.5, windowMs: 10_000, minCalls: 100, halfOpenMs: 1000 }, maxResponseBytes: 2 * MiB });
    try {
      simulator.setOptions({ fault: 'giant', giantBytes: MiB });
      await expect(checkFields(adapter, 'network_status', TEST_NUMBERS.connected)).resolves.toMatchObject({ status: 'CONNECTED' });
    } finally {
      simulator.setOptions({ giantBytes: GIANT_BYTES });
      adapter.onModuleDestroy();
    }
  });

  it('an answer that trickles in past the deadline fails as a timeout, even though every chunk arrives quickly after the one before', async () => {
    const adapter = hlrLookupsAdapter({ baseUrl: simulator.url, key: 'sim-key', secret: 'sim-secret', timeoutMs: 1000, retries: 0, breaker: { failureRate: 0.5, windowMs: 10_000, minCalls: 100, halfOpenMs: 1000 } });
    try {
      // The whole answer, dripped inside a generous deadline: read, and its size known.
      const patient = hlrLookupsAdapter({ baseUrl: simulator.url, key: 'sim-key', secret: 'sim-secret', timeoutMs: 30_000, retries: 0, breaker: { failureRate: 0.5, windowMs: 10_000, minCalls: 100, halfOpenMs: 1000 } });
      simulator.setOptions({ fault: 'drip', slowMs: 0 });
      simulator.resetStats();
      await expect(checkFields(patient, 'network_status', TEST_NUMBERS.connected)).resolves.toMatchObject({ status: 'CONNECTED' }).finally(() => patient.onModuleDestroy());
      const whole = simulator.stats().streamedBytes;

      simulator.setOptions({ fault: 'drip', slowMs: 6000 });
      simulator.resetStats();
      expect(await failureOf(checkFields(adapter, 'network_status', TEST_NUMBERS.connected))).toMatchObject({ reason: 'timeout' });
      // The stream was given up at the deadline, not read to its end.
      await eventually(() => simulator.stats().streamsEnded, (ended) => ended >= 1, 30_000, 10);
      const { streamedBytes } = simulator.stats();
      expect(streamedBytes).toBeGreaterThan(0);
      expect(streamedBytes).toBeLessThan(whole);
    } finally {
      adapter.onModuleDestroy();
    }
  });
});

describe('POST /api/v1/filter when the upstream answers a giant body', () => {
  let simulator: UpstreamSimulator;
  let t: TestApp;
  beforeAll(async () => {
    simulator = await startUpstreamSimulator({ giantBytes: GIANT_BYTES, fault: 'giant' });
    t = await startTestApp(hlrLookupsEnv(simulator.url, { PROVIDER_TIMEOUT_MS: '20000', PROVIDER_RETRIES: '0', PROVIDER_MAX_RESPONSE_BYTES: String(MiB) }));
  });
  afterAll(async () => {
    await t?.close();
    await simulator?.close();
  });

  it('answers 503 PROVIDER_UNAVAILABLE and refunds the charge', async () => {
    const account = await createAccount(t, { credits: 100 });
    const before = (await request(t.http).get('/api/v1/balance').set(account.auth).expect(200)).body.balance;
    const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }).expect(503);
    expect(res.body.error.code).toBe('PROVIDER_UNAVAILABLE');
    expect((await request(t.http).get('/api/v1/balance').set(account.auth).expect(200)).body.balance).toBe(before);
    expect(simulator.stats().streamedBytes).toBeLessThan(3 * (MiB + IN_FLIGHT_SLACK));
  });
});
