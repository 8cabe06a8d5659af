import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { startTestApp, TestApp } from './helpers/test-app';
import { hlrLookupsEnv } from './provider-helpers';

/** The breaker's window, short so that the idle gap is short; the gap is longer than the window. */
const WINDOW_MS = 2000;
const IDLE_GAP_MS = WINDOW_MS + 400;

/** Plan-valid UK mobiles ending in 0003: the upstream (simulator) answers their lookups HTTP 503 NETWORK_FAILURE. */
const failingNumbers = (count: number, block: number) => Array.from({ length: count }, (_, i) => `+4474${block}${String(i).padStart(2, '0')}0003`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The chaos run's reproduction (issue 24, "the live breaker counts failures older than its window"):
 * 19 calls, 10 of them failing, an idle gap longer than the window, one more failure; the next 10
 * answerable calls must be answered, not refused with the circuit open.
 */
describe('the live breaker: a window in time, and a failing number is not a failing upstream', () => {
  let simulator: UpstreamSimulator;
  let t: TestApp;
  let account: TestAccount;
  beforeAll(async () => {
    simulator = await startUpstreamSimulator();
    t = await startTestApp(
      hlrLookupsEnv(simulator.url, {
        PROVIDER_TIMEOUT_MS: '2000',
        PROVIDER_RETRIES: '0',
        PROVIDER_BREAKER_FAILURE_RATE: '0.5',
        PROVIDER_BREAKER_WINDOW_MS: String(WINDOW_MS),
        PROVIDER_BREAKER_MIN_CALLS: '20',
        // Once open it would stay open for the whole test: a refusal cannot hide behind a quick recovery.
        PROVIDER_BREAKER_HALF_OPEN_MS: '60000',
      }),
    );
    account = await createAccount(t, { credits: 100_000 });
    await request(t.http)
      .patch('/api/v1/settings')
      .set(account.auth)
      .send({ checks: { network_status: true, line_type: false, portability: false } })
      .expect(200);
  });
  afterAll(async () => {
    await t?.close();
    await simulator?.close();
  });

  const filter = (phone: string) => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone });
  /** All at once, as in the chaos run, so that they land well inside one window. */
  const togetherStatusesOf = async (phones: string[]) => (await Promise.all(phones.map((phone) => filter(phone)))).map((res) => res.status);
  const statusesOf = async (phones: string[]) => {
    const statuses: number[] = [];
    for (const phone of phones) statuses.push((await filter(phone)).status);
    return statuses;
  };
  /** 'ok', or the status and the error code. */
  const answerOf = (res: request.Response) => (res.status === 200 ? 'ok' : `${res.status} ${res.body.error?.code}`);
  const circuitOpenAnswers = async (phones: string[]) => {
    const codes: string[] = [];
    for (const phone of phones) codes.push(answerOf(await filter(phone)));
    return codes;
  };

  it('after 19 calls (10 failing numbers), an idle gap and one more failing number, the next 10 answerable calls are 200', async () => {
    const answerable = distinctNumbers(30, 91);
    const failing = failingNumbers(11, 91);
    const first = [...failing.slice(0, 10), ...answerable.slice(0, 9)];
    expect(await togetherStatusesOf(first)).toEqual([...Array(10).fill(503), ...Array(9).fill(200)]);
    await sleep(IDLE_GAP_MS);
    expect((await filter(failing[10])).status).toBe(503);
    // main: ten times 503 PROVIDER_UNAVAILABLE (circuit_open), the upstream healthy
    expect(await circuitOpenAnswers(answerable.slice(10, 20))).toEqual(Array(10).fill('ok'));
  });

  it('upstream failures from before an idle gap longer than the window no longer count: one more cannot open the circuit', async () => {
    // Real upstream failures this time (HTTP 500 for these numbers), so only the window in time is tested.
    const broken = distinctNumbers(11, 92);
    simulator.setOptions({ faultsByNumber: Object.fromEntries(broken.map((phone) => [phone, 'http-500'])) });
    try {
      const answerable = distinctNumbers(30, 93);
      const first = [...broken.slice(0, 10), ...answerable.slice(0, 9)];
      expect(await togetherStatusesOf(first)).toEqual([...Array(10).fill(503), ...Array(9).fill(200)]);
      await sleep(IDLE_GAP_MS);
      expect((await filter(broken[10])).status).toBe(503);
      // main: cockatiel's SamplingBreaker moved its window by one bucket for that call, kept the ten older failures, and opened
      expect(await circuitOpenAnswers(answerable.slice(10, 20))).toEqual(Array(10).fill('ok'));
    } finally {
      simulator.setOptions({ faultsByNumber: {} });
    }
  });

  it('many failing numbers in a row never open the circuit: the upstream answered each of them', async () => {
    const failing = failingNumbers(30, 94);
    expect(await statusesOf(failing)).toEqual(Array(30).fill(503));
    expect(await circuitOpenAnswers(distinctNumbers(5, 94))).toEqual(Array(5).fill('ok'));
  });

  it('upstream failures inside the window still open the circuit', async () => {
    await sleep(IDLE_GAP_MS); // the answered calls of the tests before leave the window
    simulator.setOptions({ outage: true });
    try {
      // All at once, so that they land inside one window however slow the machine (one after another, at
      // over ~100 ms a call, the 20 it needs would spread past the 2 s window).
      const codes = (await Promise.all(distinctNumbers(25, 95).map((phone) => filter(phone)))).map(answerOf);
      expect(codes).toEqual(Array(25).fill('503 PROVIDER_UNAVAILABLE'));
    } finally {
      simulator.setOptions({ outage: false });
    }
    // The circuit is open now (half-open only after a minute): the healthy upstream is not even asked.
    simulator.resetStats();
    expect((await filter(distinctNumbers(1, 96)[0])).status).toBe(503);
    expect(simulator.stats().requests).toBe(0);
  });
});
