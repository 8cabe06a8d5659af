import type { EnabledChecks } from '../../../src/checks/checks';
import { startTwilioSimulator, TwilioSimulator } from '../../../tools/twilio-simulator/simulator';
import { startUpstreamSimulator, UpstreamSimulator } from '../../../tools/upstream-simulator/simulator';
import { distinctNumbers } from '../../helpers/bulk';
import { ManualClock } from '../../helpers/manual-clock';
import { checkFields, hlrLookupsEnv, ProviderTestModule, startProviderModule, twoUpstreamsEnv } from '../../provider-helpers';

/**
 * The breakers' and the router's rules about time, on the clock: the real ProviderModule and its
 * adapters against the upstream simulators, every window, half-open delay and 429 hold read from a
 * ManualClock the test moves (moved from breaker-window and failover-resilience e2e, which slept
 * through them). What a client sees of an open breaker (503 PROVIDER_UNAVAILABLE) stays in
 * test/breaker-window.e2e-spec.ts.
 */
const WINDOW_MS = 10_000;
const HALF_OPEN_MS = 60_000;
/**
 * The upstreams' deadline: reached only by a failure. The simulators answer from this test's own process,
 * which a loaded machine starves for seconds; no case here is about a timeout. (Two providers of 20 s
 * stay within the default UNSETTLED_CHARGE_REFUND_AFTER_SECONDS of 60.)
 */
const TIMEOUT_MS = '20000';
const BOTH: EnabledChecks = { network_status: true, line_type: true, portability: false };

/** Plan-valid UK mobiles ending in 0003: the upstream (simulator) answers their lookups HTTP 503 NETWORK_FAILURE. */
const failingNumbers = (count: number, block: number) => Array.from({ length: count }, (_, i) => `+4474${block}${String(i).padStart(2, '0')}0003`);

/** 'ok', or why the port refused (a ProviderUnavailableError's reason). */
const outcomeOf = (work: Promise<unknown>): Promise<string> => work.then(
  () => 'ok',
  (error: { reason?: string }) => String(error.reason),
);

describe('the live breaker: a window in time, on the clock, and a failing number is not a failing upstream', () => {
  let simulator: UpstreamSimulator;
  let clock: ManualClock;
  let t: ProviderTestModule;
  beforeAll(async () => {
    simulator = await startUpstreamSimulator();
  });
  afterAll(() => simulator?.close());
  // Each case on an adapter of its own: its window holds only its own calls.
  beforeEach(async () => {
    clock = new ManualClock();
    t = await startProviderModule(
      hlrLookupsEnv(simulator.url, {
        PROVIDER_TIMEOUT_MS: TIMEOUT_MS,
        PROVIDER_RETRIES: '0',
        PROVIDER_BREAKER_FAILURE_RATE: '0.5',
        PROVIDER_BREAKER_WINDOW_MS: String(WINDOW_MS),
        PROVIDER_BREAKER_MIN_CALLS: '20',
        PROVIDER_BREAKER_HALF_OPEN_MS: String(HALF_OPEN_MS),
      }),
      ['error'],
      { clock },
    );
  });
  afterEach(async () => {
    simulator.setOptions({ outage: false, faultsByNumber: {} });
    await t.close();
  });

  const ask = (phone: string) => outcomeOf(checkFields(t.provider, 'network_status', phone));
  const together = (phones: string[]) => Promise.all(phones.map(ask));
  const oneByOne = async (phones: string[]) => {
    const outcomes: string[] = [];
    for (const phone of phones) outcomes.push(await ask(phone));
    return outcomes;
  };

  it('after 19 calls (10 failing numbers), a gap longer than the window and one more failing number, the next 10 answerable calls are answered', async () => {
    const answerable = distinctNumbers(30, 91);
    const failing = failingNumbers(11, 91);
    expect(await together([...failing.slice(0, 10), ...answerable.slice(0, 9)])).toEqual([...Array(10).fill('upstream_error'), ...Array(9).fill('ok')]);
    await clock.advance(WINDOW_MS + 1);
    expect(await ask(failing[10])).toBe('upstream_error');
    // main before the time window: ten times circuit_open, the upstream healthy
    expect(await oneByOne(answerable.slice(10, 20))).toEqual(Array(10).fill('ok'));
  });

  it('upstream failures from before a gap longer than the window no longer count: one more cannot open the circuit', async () => {
    // Real upstream failures this time (HTTP 500 for these numbers), so only the window in time is tested.
    const broken = distinctNumbers(11, 92);
    simulator.setOptions({ faultsByNumber: Object.fromEntries(broken.map((phone) => [phone, 'http-500'])) });
    const answerable = distinctNumbers(30, 93);
    expect(await together([...broken.slice(0, 10), ...answerable.slice(0, 9)])).toEqual([...Array(10).fill('upstream_error'), ...Array(9).fill('ok')]);
    await clock.advance(WINDOW_MS + 1);
    expect(await ask(broken[10])).toBe('upstream_error');
    // cockatiel's SamplingBreaker moved its window by one bucket for that call, kept the ten older failures, and opened
    expect(await oneByOne(answerable.slice(10, 20))).toEqual(Array(10).fill('ok'));
    expect(t.adapter.circuitState('interactive')).toBe('closed');
  });

  it('many failing numbers in a row never open the circuit: the upstream answered each of them', async () => {
    expect(await oneByOne(failingNumbers(30, 94))).toEqual(Array(30).fill('upstream_error'));
    expect(await oneByOne(distinctNumbers(5, 94))).toEqual(Array(5).fill('ok'));
  });

  it('upstream failures inside the window open the circuit; its half-open trial is due by the clock, and closes it', async () => {
    simulator.setOptions({ outage: true });
    expect(await oneByOne(distinctNumbers(20, 95))).toEqual(Array(20).fill('upstream_error'));
    expect(t.adapter.circuitState('interactive')).toBe('open');
    simulator.setOptions({ outage: false });
    simulator.resetStats();
    expect(await ask(distinctNumbers(1, 96)[0])).toBe('circuit_open');
    await clock.advance(HALF_OPEN_MS - 1);
    expect(await ask(distinctNumbers(1, 97)[0])).toBe('circuit_open');
    expect(simulator.stats().requests).toBe(0); // refused without a request
    await clock.advance(1);
    expect(await ask(distinctNumbers(1, 98)[0])).toBe('ok'); // the trial
    expect(simulator.stats().requests).toBe(1);
    expect(t.adapter.circuitState('interactive')).toBe('closed');
  });
});

describe("an upstream's 429 holds its lane back for Retry-After, by the clock", () => {
  it('a 429 met by batch work holds back batch work only, until its Retry-After (1 s) has passed', async () => {
    const limited = '+447400990429';
    const simulator = await startUpstreamSimulator({ faultsByNumber: { [limited]: 'http-429' } });
    const clock = new ManualClock();
    const t = await startProviderModule(hlrLookupsEnv(simulator.url, { PROVIDER_RETRIES: '0', PROVIDER_TIMEOUT_MS: TIMEOUT_MS }), ['error'], { clock });
    const ask = (phone: string, lane: 'batch' | 'interactive') => outcomeOf(checkFields(t.provider, 'network_status', phone, lane)).then((reason) => reason);
    const kindOf = (phone: string, lane: 'batch' | 'interactive') =>
      checkFields(t.provider, 'network_status', phone, lane).then(
        () => 'ok',
        (error: { kind?: string }) => String(error.kind),
      );
    try {
      expect(await kindOf(limited, 'batch')).toBe('rate_limited');
      simulator.resetStats();
      expect(await kindOf('+447400123456', 'batch')).toBe('rate_limit_wait');
      expect(await ask('+447400123456', 'interactive')).toBe('ok');
      await clock.advance(999);
      expect(await kindOf('+447400123457', 'batch')).toBe('rate_limit_wait');
      expect(simulator.stats().requests).toBe(1); // the interactive call only: batch work waited without a request
      await clock.advance(1);
      expect(await kindOf('+447400123457', 'batch')).toBe('ok');
    } finally {
      await t.close();
      await simulator.close();
    }
  });
});

describe('failover on the clock: breakers get their half-open trial, demoted providers theirs', () => {
  let primary: UpstreamSimulator;
  let backup: TwilioSimulator;
  beforeAll(async () => {
    [primary, backup] = await Promise.all([startUpstreamSimulator(), startTwilioSimulator()]);
  });
  afterAll(async () => {
    await Promise.all([primary?.close(), backup?.close()]);
  });
  afterEach(() => {
    primary.setOptions({ outage: false });
    backup.setOptions({ outage: false });
  });

  /** Which simulators one lookup of both checks reached, and how it ended. */
  async function asked(t: ProviderTestModule, phone: string): Promise<{ primary: number; backup: number; outcome: string }> {
    primary.resetStats();
    backup.resetStats();
    const outcome = await t.lookups.lookUp(phone, BOTH, { maxAgeSeconds: 0 }).then(
      () => 'ok',
      (error: { code?: string }) => String(error.code),
    );
    return { primary: primary.stats().requests, backup: backup.stats().requests, outcome };
  }
  const circuit = (t: ProviderTestModule, id: string) => t.provider.upstreams().find((upstream) => upstream.provider === id)!.circuitState('interactive');

  it('a recovered primary answers again once its breaker is due for a trial by the clock; the backup is no longer asked', async () => {
    const clock = new ManualClock();
    const t = await startProviderModule(
      twoUpstreamsEnv(primary.url, backup.url, { PROVIDER_TIMEOUT_MS: TIMEOUT_MS, PROVIDER_BREAKER_MIN_CALLS: '4', PROVIDER_BREAKER_WINDOW_MS: '10000', PROVIDER_BREAKER_HALF_OPEN_MS: String(HALF_OPEN_MS) }),
      ['error'],
      { clock },
    );
    const phones = distinctNumbers(20, 10);
    try {
      primary.setOptions({ outage: true });
      for (const phone of phones.slice(0, 3)) expect((await asked(t, phone)).outcome).toBe('ok'); // answered by the backup
      expect(circuit(t, 'primary')).toBe('open');
      primary.setOptions({ outage: false });
      // While open, the breaker refuses without a request.
      expect(await asked(t, phones[3])).toEqual({ primary: 0, backup: 2, outcome: 'ok' });
      await clock.advance(HALF_OPEN_MS - 1);
      expect(await asked(t, phones[4])).toEqual({ primary: 0, backup: 2, outcome: 'ok' });
      await clock.advance(1);
      const trial = await asked(t, phones[5]);
      expect(trial.primary).toBeGreaterThanOrEqual(1);
      expect(circuit(t, 'primary')).toBe('closed');
      expect(await asked(t, phones[6])).toEqual({ primary: 2, backup: 0, outcome: 'ok' });
    } finally {
      await t.close();
    }
  });

  it('every breaker open: the lookup fails while they are down, and is answered again once they recover and their trial is due (no restart)', async () => {
    const clock = new ManualClock();
    const t = await startProviderModule(
      twoUpstreamsEnv(primary.url, backup.url, { PROVIDER_TIMEOUT_MS: TIMEOUT_MS, PROVIDER_BREAKER_MIN_CALLS: '4', PROVIDER_BREAKER_WINDOW_MS: '10000', PROVIDER_BREAKER_HALF_OPEN_MS: String(HALF_OPEN_MS) }),
      ['error'],
      { clock },
    );
    const phones = distinctNumbers(20, 11);
    try {
      primary.setOptions({ outage: true });
      backup.setOptions({ outage: true });
      for (const phone of phones.slice(0, 2)) expect((await asked(t, phone)).outcome).toBe('PROVIDER_UNAVAILABLE');
      expect([circuit(t, 'primary'), circuit(t, 'backup')]).toEqual(['open', 'open']);
      expect(await asked(t, phones[2])).toEqual({ primary: 0, backup: 0, outcome: 'PROVIDER_UNAVAILABLE' });
      primary.setOptions({ outage: false });
      backup.setOptions({ outage: false });
      expect(await asked(t, phones[3])).toEqual({ primary: 0, backup: 0, outcome: 'PROVIDER_UNAVAILABLE' });
      await clock.advance(HALF_OPEN_MS);
      expect((await asked(t, phones[4])).outcome).toBe('ok');
    } finally {
      await t.close();
    }
  });

  it('a primary demoted for its failures stays asked last until they leave the window by the clock; one trial then promotes it back', async () => {
    const clock = new ManualClock();
    const demotionWindowMs = 8000;
    const t = await startProviderModule(
      twoUpstreamsEnv(primary.url, backup.url, {
        PROVIDER_TIMEOUT_MS: TIMEOUT_MS,
        PROVIDER_BREAKER_MIN_CALLS: '1000', // only the demotion is at work here
        LOOKUP_DEMOTE_WINDOW_MS: String(demotionWindowMs),
        LOOKUP_DEMOTE_WINDOW_CALLS: '2',
        LOOKUP_DEMOTE_MIN_CALLS: '2',
      }),
      ['error'],
      { clock, metrics: true },
    );
    const phones = distinctNumbers(20, 12);
    const primaryEntry = async () => (await t.health.check()).providers.find((entry) => entry.provider === 'primary')!;
    const demotedGauge = async () => Number(/^phone_filter_provider_demoted\{provider="primary",lane="interactive"\} (\S+)$/m.exec(await t.scrape('phone_filter_provider_demoted'))?.[1]);
    try {
      primary.setOptions({ outage: true });
      expect(await asked(t, phones[0])).toEqual({ primary: 2, backup: 2, outcome: 'ok' });
      primary.setOptions({ outage: false });
      expect(await primaryEntry()).toMatchObject({ state: 'demoted', recent: { interactive: { calls: 2, demoted: true, reason: 'failures' } } });
      expect(await demotedGauge()).toBe(1);
      expect(await asked(t, phones[1])).toEqual({ primary: 0, backup: 2, outcome: 'ok' });
      await clock.advance(demotionWindowMs - 1);
      expect(await asked(t, phones[2])).toEqual({ primary: 0, backup: 2, outcome: 'ok' });
      await clock.advance(1);
      expect(await primaryEntry()).toMatchObject({ state: 'demoted', recent: { interactive: { calls: 0, demoted: true, reason: 'recovering' } } });
      // The lookup's two checks are routed at once: one is the trial; the other asks the primary first only if the trial answered before it was routed.
      const trial = await asked(t, phones[3]);
      expect(trial.primary).toBeGreaterThanOrEqual(1);
      expect(trial.primary + trial.backup).toBe(2);
      expect(await primaryEntry()).toMatchObject({ state: 'up', recent: { interactive: { demoted: false } } });
      // The gauge /metrics shows goes back to 0 with it (bad3a5f's e2e checked it; the e2e no longer waits for the window).
      expect(await demotedGauge()).toBe(0);
      expect(await asked(t, phones[4])).toEqual({ primary: 2, backup: 0, outcome: 'ok' });
    } finally {
      await t.close();
    }
  });
});
