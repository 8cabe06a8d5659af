import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { hlrLookupsEnv } from './provider-helpers';
import { startTestApp, TestApp } from './helpers/test-app';

/** Plan-valid UK mobiles ending in 0003: the upstream fails every lookup of these numbers. */
const failingNumbers = (count: number) => Array.from({ length: count }, (_, i) => `+447400${String(i).padStart(2, '0')}0003`);

describe('the circuit breaker opens when the upstream is unhealthy, not when numbers fail', () => {
  let simulator: UpstreamSimulator;
  let t: TestApp;
  beforeAll(async () => {
    simulator = await startUpstreamSimulator();
    t = await startTestApp({
      ...hlrLookupsEnv(simulator.url, { PROVIDER_TIMEOUT_MS: '2000', PROVIDER_RETRIES: '0' }),
      // The defaults, whatever the helper sets (the consecutive-failure count is what main had).
      PROVIDER_BREAKER_THRESHOLD: '5',
      PROVIDER_BREAKER_FAILURE_RATE: '0.5',
      PROVIDER_BREAKER_WINDOW_MS: '10000',
      PROVIDER_BREAKER_MIN_CALLS: '20',
      PROVIDER_BREAKER_HALF_OPEN_MS: '10000',
      BULK_QUEUE_NAME: `bulk-breaker-${randomBytes(4).toString('hex')}`,
      BULK_POLL_INTERVAL_SECONDS: '0.5',
    });
  });
  afterAll(async () => {
    await t?.close();
    await simulator?.close();
  });

  it('a bulk job full of failing numbers leaves live /filter answering 200, during and after the job', async () => {
    const account = await createAccount(t, { credits: 10_000 });
    const job = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: failingNumbers(60) }).expect(202);
    const live = distinctNumbers(40, 71);
    const statuses: number[] = [];
    let status = 'queued';
    for (let i = 0; status !== 'completed'; i++) {
      const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: live[i % live.length] });
      statuses.push(res.status);
      status = (await request(t.http).get(`/api/v1/filter/bulk/${job.body.id}`).set(account.auth).expect(200)).body.status;
    }
    for (const phone of live.slice(0, 5)) statuses.push((await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone })).status);
    expect(statuses.every((code) => code === 200)).toBe(true);
  }, 60_000);

  it('a few failing numbers among live calls never open the breaker for the others', async () => {
    const account = await createAccount(t, { credits: 10_000 });
    const phones = [...failingNumbers(6), ...distinctNumbers(60, 72)];
    const responses = await Promise.all(phones.map((phone) => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone })));
    expect(responses.slice(0, 6).map((res) => res.status)).toEqual(Array(6).fill(503));
    expect(responses.slice(6).filter((res) => res.status !== 200)).toEqual([]);
  });
});
