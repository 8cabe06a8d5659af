import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { startTwilioSimulator, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { startTestApp, TestApp } from './helpers/test-app';
import { CHECKS_BOTH_UPSTREAMS_OFFER, twoUpstreamsEnv } from './provider-helpers';

/**
 * Long enough that the slow answers which demoted the primary are still in it in the next test: a CI
 * run once took over 2.5 s between them, the primary's outcomes aged out, and the backup-outage call
 * became the primary's trial ({ primary: 2, backup: 1 }). The window's logic on a clock is in
 * src/provider/routing/health-window.spec.ts and test/medium/provider/breakers.medium-spec.ts.
 */
const WINDOW_MS = 30_000;
/** A window of one call's two checks: its verdict never mixes fast and slow answers (whose median would depend on the machine's load). */
const DEMOTION = {
  LOOKUP_DEMOTE_WINDOW_MS: String(WINDOW_MS),
  LOOKUP_DEMOTE_WINDOW_CALLS: '2',
  LOOKUP_DEMOTE_MIN_CALLS: '2',
  // A healthy answer on a loaded machine (two busy loops beside the suite) once took over 500 ms: the
  // threshold is far above that, and the slow primary far above the threshold.
  LOOKUP_DEMOTE_LATENCY_MS: '2000',
};
const SLOW_MS = 4000;

/**
 * Demotion by health, end to end (issue 23 point 2): a primary that answers, but slowly, is asked after
 * the backup once the window holds enough of its slow answers, shown demoted on /health/ready and
 * /metrics, and still asked when the backup fails. Each /filter call asks two checks (two attempts).
 */
describe('demotion by health (LOOKUP_DEMOTE_*): a slow primary is asked after the backup', () => {
  let primary: UpstreamSimulator;
  let backup: TwilioSimulator;
  let t: TestApp;
  let account: TestAccount;
  let block = 70;
  const fresh = () => distinctNumbers(1, block++)[0];

  beforeAll(async () => {
    [primary, backup] = await Promise.all([startUpstreamSimulator(), startTwilioSimulator()]);
    t = await startTestApp(twoUpstreamsEnv(primary.url, backup.url, { PROVIDER_TIMEOUT_MS: '10000', ...DEMOTION }));
    account = await createAccount(t, { credits: 10_000 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send(CHECKS_BOTH_UPSTREAMS_OFFER).expect(200);
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([primary?.close(), backup?.close()]);
  });

  /** Which simulators one cache-miss call reached (lookups only: the readiness probe is not a lookup). */
  const asked = async () => {
    primary.resetStats();
    backup.resetStats();
    const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: fresh() }).expect(200);
    expect(res.body).toMatchObject({ status: 'CONNECTED', line_type: 'MOBILE' });
    return { primary: primary.stats().requests, backup: backup.stats().requests };
  };
  const primaryEntry = async () => {
    const body = (await request(t.http).get('/health/ready').expect(200)).body;
    const providers = body.info.provider.providers as Array<{ provider: string; state: string; recent?: Record<string, { demoted: boolean; reason?: string }> }>;
    return providers.find((entry) => entry.provider === 'primary')!;
  };
  const demotedGauge = async () => {
    const text = (await request(t.http).get('/metrics').expect(200)).text;
    return Number(/^phone_filter_provider_demoted\{provider="primary",lane="interactive"\} (\S+)$/m.exec(text)?.[1]);
  };

  it('asks the healthy primary first', async () => {
    expect(await asked()).toEqual({ primary: 2, backup: 0 });
    expect(await primaryEntry()).toMatchObject({ state: 'up', recent: { interactive: { demoted: false }, batch: { demoted: false } } });
    expect(await demotedGauge()).toBe(0);
  });

  it('a primary answering slowly is still asked (not skipped) until the window holds its slow answers, then the backup goes first', async () => {
    primary.setOptions({ latencyMs: SLOW_MS });
    expect(await asked()).toEqual({ primary: 2, backup: 0 });
    expect(await primaryEntry()).toMatchObject({ state: 'demoted', recent: { interactive: { calls: 2, demoted: true, reason: 'latency' } } });
    expect(await demotedGauge()).toBe(1);
    expect(await asked()).toEqual({ primary: 0, backup: 2 });
    expect(await asked()).toEqual({ primary: 0, backup: 2 });
  });

  it('a demoted primary still answers when the backup fails', async () => {
    expect(await primaryEntry()).toMatchObject({ state: 'demoted', recent: { interactive: { calls: 2, demoted: true, reason: 'latency' } } });
    backup.setOptions({ outage: true });
    try {
      expect(await asked()).toEqual({ primary: 2, backup: 2 });
    } finally {
      backup.setOptions({ outage: false });
    }
  });
  // Its recovery once the window has passed (one trial, then promoted back): test/medium/provider/breakers.medium-spec.ts, on the clock.
});
