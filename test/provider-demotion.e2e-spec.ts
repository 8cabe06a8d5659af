import request from 'supertest';
import { setTimeout as sleep } from 'node:timers/promises';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { startTwilioSimulator, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { startTestApp, TestApp } from './helpers/test-app';
import { CHECKS_BOTH_UPSTREAMS_OFFER, twoUpstreamsEnv } from './provider-helpers';

/**
 * A window short enough that the last test sees a demotion end (docs/operations.md "Demotion by health"),
 * and long enough that the slow answers which demoted the primary are still in it in the next test: a
 * CI run once took over 2.5 s between them, the primary's outcomes aged out, and the backup-outage call
 * became the primary's trial ({ primary: 2, backup: 1 }). The window's logic on a clock of its own is in
 * src/provider/routing/health-window.spec.ts.
 */
const WINDOW_MS = 8000;
/** A window of one call's two checks: its verdict never mixes fast and slow answers (whose median would depend on the machine's load). */
const DEMOTION = {
  LOOKUP_DEMOTE_WINDOW_MS: String(WINDOW_MS),
  LOOKUP_DEMOTE_WINDOW_CALLS: '2',
  LOOKUP_DEMOTE_MIN_CALLS: '2',
  LOOKUP_DEMOTE_LATENCY_MS: '500',
};
const SLOW_MS = 1000;

/**
 * Demotion by health, end to end (issue 23 point 2): a primary that answers, but slowly, is asked after
 * the backup once the window holds enough of its slow answers; once it answers fast again and the
 * window has passed, one trial call asks it first, and its fast answer promotes it back. Each /filter
 * call asks two checks (two attempts).
 */
describe('demotion by health (LOOKUP_DEMOTE_*): a slow primary is asked after the backup, then promoted back', () => {
  let primary: UpstreamSimulator;
  let backup: TwilioSimulator;
  let t: TestApp;
  let account: TestAccount;
  let block = 70;
  const fresh = () => distinctNumbers(1, block++)[0];

  beforeAll(async () => {
    [primary, backup] = await Promise.all([startUpstreamSimulator(), startTwilioSimulator()]);
    t = await startTestApp(twoUpstreamsEnv(primary.url, backup.url, { PROVIDER_TIMEOUT_MS: '3000', ...DEMOTION }));
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

  it('once it answers fast again and its slow answers have left the window, one trial call asks it first, then it is promoted back', async () => {
    primary.setOptions({ latencyMs: 0 });
    await sleep(WINDOW_MS + 100); // the window is in time: a demoted provider's outcomes age out
    expect(await primaryEntry()).toMatchObject({ state: 'demoted', recent: { interactive: { calls: 0, demoted: true, reason: 'recovering' } } });
    // The call's two checks are routed at once: one is the trial; the other asks the primary first only if the trial answered before it was routed.
    const trial = await asked();
    expect(trial.primary).toBeGreaterThanOrEqual(1);
    expect(trial.primary + trial.backup).toBe(2);
    expect(await primaryEntry()).toMatchObject({ state: 'up', recent: { interactive: { demoted: false } } });
    expect(await asked()).toEqual({ primary: 2, backup: 0 });
    expect(await asked()).toEqual({ primary: 2, backup: 0 });
    expect(await demotedGauge()).toBe(0);
  });
});
