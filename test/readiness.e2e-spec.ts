import request from 'supertest';
import { ReadinessProbe } from '../src/health/readiness-probe';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { expectError } from './helpers/expect-error';
import { startTestApp, TestApp } from './helpers/test-app';
import { hlrLookupsEnv } from './provider-helpers';

/**
 * /health/ready from what the service already knows (issue 35 point 4): with upstreams answering in
 * 1.5 s, readiness took 1.52 s, because each request probed every provider; a load balancer with a 1 s
 * health timeout then marked every instance down exactly when the upstreams were slow. The probe is now
 * a background job (ReadinessProbe, its step called here); a readiness request asks no upstream.
 */
describe('/health/ready with slow upstreams', () => {
  let upstream: UpstreamSimulator;
  let t: TestApp;
  beforeAll(async () => {
    upstream = await startUpstreamSimulator();
    upstream.setOptions({ latencyMs: 1500 });
    // The job's own rounds an hour apart: the test runs its step.
    t = await startTestApp(hlrLookupsEnv(upstream.url, { PROVIDER_TIMEOUT_MS: '10000', READINESS_PROBE_INTERVAL_MS: '3600000' }));
  });
  afterAll(async () => {
    await t?.close();
    await upstream?.close();
  });

  const ready = () => request(t.http).get('/health/ready');

  it('answers from the last probe without asking the upstream, however slow it is', async () => {
    await t.app.get(ReadinessProbe).probe();
    upstream.resetStats();

    const res = await ready().expect(200);

    expect(upstream.stats().requests).toBe(0);
    const [entry] = res.body.info.provider.providers;
    expect(entry).toMatchObject({ provider: 'hlr-lookups', state: 'up', reachable: true });
    expect(Date.parse(entry.probed_at)).not.toBeNaN();
  });

  it('says the upstream is down once a probe found it so, still without asking it during the request', async () => {
    upstream.setOptions({ outage: true });
    try {
      expect((await t.app.get(ReadinessProbe).probe()).reachable).toBe(false);
      upstream.resetStats();

      expectError(await ready(), 503, 'SERVICE_UNAVAILABLE');

      expect(upstream.stats().requests).toBe(0);
    } finally {
      upstream.setOptions({ outage: false });
    }
    await t.app.get(ReadinessProbe).probe();
    await ready().expect(200);
  });
});
