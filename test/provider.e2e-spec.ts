import 'reflect-metadata';
import { keyedHash } from '../src/common/keyed-hash';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import Redis from 'ioredis';
import { AppError } from '../src/common/errors';
import { HlrLookupsAdapter } from '../src/provider/adapters/hlr-lookups.adapter';
import { digestHeaders } from '../src/provider/adapters/hlr-lookups.protocol';
import { SandboxAdapter } from '../src/provider/adapters/sandbox.adapter';
import { TwilioLookupAdapter } from '../src/provider/adapters/twilio-lookup.adapter';
import { ProviderUnavailableError } from '../src/provider/port/upstream-failure';
import type { LookupProvider } from '../src/provider/port/lookup-provider';
import { EnabledChecks } from '../src/checks/checks';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { eventually } from './helpers/eventually';
import { ManualClock } from './helpers/manual-clock';
import { testRedisUrl } from './helpers/redis';
import { checkFields, hlrLookupsEnv, ProviderTestModule, startProviderModule } from './provider-helpers';

const ALL: EnabledChecks = { network_status: true, line_type: true, portability: true };
const NETWORK_ONLY: EnabledChecks = { network_status: true, line_type: false, portability: false };

/** Plan-valid UK mobile numbers (original operator: Three) ending in each test suffix. */
const UK = {
  absent: '+447400120000',
  undetermined: '+447400120001',
  ported: '+447400120002',
  failing: '+447400120003',
  slow: '+447400120004',
  normal: '+447400123456',
  flapping: '+447400130005',
  switching: '+447400130006',
};

async function unavailableReason(work: Promise<unknown>): Promise<string> {
  const error = await work.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ProviderUnavailableError);
  return (error as ProviderUnavailableError).reason;
}

async function expectProviderUnavailable(work: Promise<unknown>): Promise<void> {
  const error = await work.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AppError);
  expect((error as AppError).code).toBe('PROVIDER_UNAVAILABLE');
  expect((error as AppError).status).toBe(503);
}

/** The test-number table, as every adapter must answer it (docs/api.md). */
function describeTestNumberTable(name: string, setup: () => { provider: () => LookupProvider; module: () => ProviderTestModule }) {
  describe(`${name}: the test-number table`, () => {
    const { provider, module } = setup();

    it('answers a normal number CONNECTED, not ported, with its original operator', async () => {
      await expect(checkFields(provider(), 'network_status', UK.normal)).resolves.toEqual({ status: 'CONNECTED', carrier: 'Three' });
      await expect(checkFields(provider(), 'portability', UK.normal)).resolves.toEqual({ is_ported: false, carrier: 'Three' });
      await expect(checkFields(provider(), 'line_type', UK.normal)).resolves.toEqual({ line_type: 'MOBILE' });
    });

    it('answers ...0000 ABSENT', async () => {
      await expect(checkFields(provider(), 'network_status', UK.absent)).resolves.toMatchObject({ status: 'ABSENT' });
      await expect(checkFields(provider(), 'portability', UK.absent)).resolves.toMatchObject({ is_ported: false });
    });

    it('answers ...0001 UNDETERMINED', async () => {
      await expect(checkFields(provider(), 'network_status', UK.undetermined)).resolves.toMatchObject({ status: 'UNDETERMINED' });
    });

    it('answers ...0002 CONNECTED and ported to a different operator', async () => {
      const network = await checkFields(provider(), 'network_status', UK.ported);
      const portability = await checkFields(provider(), 'portability', UK.ported);
      expect(network.status).toBe('CONNECTED');
      expect(portability.is_ported).toBe(true);
      expect(network.carrier).toEqual(expect.any(String));
      expect(network.carrier).not.toBe('Three');
      expect(portability.carrier).toBe(network.carrier);
    });

    it('fails ...0003 as an upstream error', async () => {
      expect(await unavailableReason(checkFields(provider(), 'network_status', UK.failing))).toBe('upstream_error');
      await expectProviderUnavailable(module().lookupAnswers(UK.failing, NETWORK_ONLY));
    });

    it('times ...0004 out after PROVIDER_TIMEOUT_MS, not after the upstream’s 10 s', async () => {
      const started = Date.now();
      expect(await unavailableReason(checkFields(provider(), 'network_status', UK.slow))).toBe('timeout');
      expect(Date.now() - started).toBeLessThan(5000);
      await expectProviderUnavailable(module().lookupAnswers(UK.slow, ALL));
    });

    it('answers a number not valid for its plan ABSENT with no type, without asking the network', async () => {
      await expect(module().phoneAnswer('+10000000000', ALL)).resolves.toEqual({ country: null, valid: false, status: 'ABSENT', carrier: null, line_type: 'UNKNOWN', is_ported: false });
      await expect(module().lookups.lookUp('+10000000000', ALL)).resolves.toMatchObject({ validForPlan: false, answers: {} });
    });

    it('answers ...0008 (subscribed, reachability unknown) UNDETERMINED and ...0009 (assigned to no subscriber) ABSENT with no operator', async () => {
      await expect(checkFields(provider(), 'network_status', '+447400120008')).resolves.toEqual({ status: 'UNDETERMINED', carrier: 'Three' });
      await expect(checkFields(provider(), 'network_status', '+447400120009')).resolves.toEqual({ status: 'ABSENT', carrier: null });
    });

    it('answers libphonenumber’s line type (US toll free, German fixed line)', async () => {
      await expect(checkFields(provider(), 'line_type', '+18002345678')).resolves.toEqual({ line_type: 'TOLL_FREE' });
      await expect(checkFields(provider(), 'line_type', '+4930123456')).resolves.toEqual({ line_type: 'FIXED_LINE' });
    });

    it('alternates ...0005 between CONNECTED and ABSENT at each live lookup, never from the cache', async () => {
      const statuses: string[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await module().phoneAnswer(UK.flapping, ALL, { maxAgeSeconds: 0 })).status);
      expect(statuses).toEqual(['CONNECTED', 'ABSENT', 'CONNECTED']);
      // A cached read answers the last live answer, which the live lookups kept refreshing.
      await expect(module().phoneAnswer(UK.flapping, ALL)).resolves.toMatchObject({ status: 'CONNECTED' });
    });

    it('alternates the operator of ...0006 at each live lookup, all checks of one answer agreeing', async () => {
      const first = await module().phoneAnswer(UK.switching, ALL, { maxAgeSeconds: 0 });
      const second = await module().phoneAnswer(UK.switching, ALL, { maxAgeSeconds: 0 });
      expect(first).toMatchObject({ status: 'CONNECTED', carrier: 'Three', is_ported: false });
      expect(second).toMatchObject({ status: 'CONNECTED', is_ported: true });
      expect(second.carrier).not.toBe('Three');
      await expect(module().phoneAnswer(UK.switching, ALL, { maxAgeSeconds: 0 })).resolves.toEqual(first);
    });

    it('answers all enabled checks together through LookupService', async () => {
      await expect(module().lookupAnswers(UK.ported, ALL)).resolves.toEqual({
        networkStatus: { status: 'CONNECTED', carrier: expect.any(String) },
        numberType: { lineType: 'MOBILE' },
        portability: { isPorted: true, carrier: expect.any(String) },
      });
      await expect(module().lookupAnswers(UK.normal, { network_status: false, line_type: true, portability: false })).resolves.toEqual({
        numberType: { lineType: 'MOBILE' },
      });
    });
  });
}

// First, so that ioredis's leftover connect timer (unreachable-Redis test) has expired when the file ends.
describe('LookupService with the Redis cache store', () => {
  let redisUrl: string;
  const prefix = `pf-test-${randomBytes(4).toString('hex')}:`;
  let sim: UpstreamSimulator;
  let redis: Redis;

  beforeAll(async () => {
    // No skipping: a missing Redis fails this suite at once, with one line saying what to install.
    redisUrl = testRedisUrl();
    sim = await startUpstreamSimulator();
    redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 2000 });
    await redis.connect();
    expect(await redis.ping()).toBe('PONG');
  });
  afterAll(async () => {
    if (redis?.status === 'ready') {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    redis?.disconnect();
    await sim?.close();
  });

  it('stores JSON answers under the key prefix with each check’s TTL, shared by every instance', async () => {
    // The first lookups of the suite (cold connections and code): a timeout a busy CI machine does not hit.
    const env = hlrLookupsEnv(sim.url, { REDIS_URL: redisUrl, CACHE_KEY_PREFIX: prefix, PROVIDER_TIMEOUT_MS: '5000' });
    const first = await startProviderModule(env);
    const second = await startProviderModule(env);
    try {
      expect(first.store.kind).toBe('redis');
      await expect(first.health.cache()).resolves.toEqual({ store: 'redis', reachable: true });
      sim.resetStats();
      const answer = await first.lookupAnswers(UK.ported, ALL);

      // The check's full record (v4) under a keyed hash of the number: its fields, with the upstream's status word and network codes, who answered and when.
      const hashed = keyedHash(first.config.dataHashKey, UK.ported);
      const key = `${prefix}v4:network_status:${hashed}`;
      expect(JSON.parse((await redis.get(key))!)).toEqual({
        answer: {
          check: 'network_status',
          fields: { ...answer.networkStatus, status_reason: 'CONNECTED', mcc: expect.any(String), mnc: expect.any(String) },
          provider: 'hlr-lookups',
          observedAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        },
        storedAt: expect.any(Number),
      });
      const ttl = await redis.ttl(key);
      expect(ttl).toBeGreaterThan(3500);
      expect(ttl).toBeLessThanOrEqual(3600);
      expect(await redis.ttl(`${prefix}v4:portability:${hashed}`)).toBeGreaterThan(86_000);
      expect(await redis.ttl(`${prefix}v4:line_type:${hashed}`)).toBeGreaterThan(2_590_000);

      await expect(second.lookupAnswers(UK.ported, ALL)).resolves.toEqual(answer);
      expect(sim.stats().requests).toBe(3);
      expect(second.lookups.counters.cache).toMatchObject({ hits: 3, misses: 0, store: 'redis' });
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('keys entries by a keyed hash: no Redis key or value holds the number, and entries of the plain-key version are ignored', async () => {
    const env = hlrLookupsEnv(sim.url, { REDIS_URL: redisUrl, CACHE_KEY_PREFIX: prefix, PROVIDER_TIMEOUT_MS: '5000' });
    // What the version before keyed hashes wrote, with an answer this version must not serve.
    await redis.set(`${prefix}v2:network_status:${UK.normal}`, JSON.stringify({ answer: { status: 'ABSENT', carrier: 'Old' }, storedAt: Date.now() }), 'EX', 600);
    const service = await startProviderModule(env);
    try {
      // What the keyed version before full records wrote (v3: the older answer shape), also not served.
      const hashed = keyedHash(service.config.dataHashKey, UK.normal);
      await redis.set(`${prefix}v3:network_status:${hashed}`, JSON.stringify({ answer: { status: 'ABSENT', carrier: 'Old' }, storedAt: Date.now() }), 'EX', 600);
      sim.resetStats();
      await expect(service.lookupAnswers(UK.normal, NETWORK_ONLY)).resolves.toEqual({ networkStatus: { status: 'CONNECTED', carrier: 'Three' } });
      expect(sim.stats().requests).toBe(1);
      const digits = UK.normal.slice(1);
      expect((await redis.keys(`${prefix}v4:*`)).length).toBeGreaterThan(0);
      for (const key of await redis.keys(`${prefix}v4:*`)) {
        expect(key).not.toContain(digits);
        expect(await redis.get(key)).not.toContain(digits);
      }
    } finally {
      await service.close();
    }
  });

  it('forgets a number in Redis, in the old plain keys and in the in-process tier of every instance', async () => {
    const env = hlrLookupsEnv(sim.url, { REDIS_URL: redisUrl, CACHE_KEY_PREFIX: prefix, PROVIDER_TIMEOUT_MS: '5000' });
    const first = await startProviderModule(env);
    const second = await startProviderModule(env);
    try {
      await redis.set(`${prefix}v2:line_type:${UK.absent}`, JSON.stringify({ answer: { lineType: 'MOBILE' }, storedAt: Date.now() }), 'EX', 600);
      const hashed = keyedHash(first.config.dataHashKey, UK.absent);
      await redis.set(`${prefix}v3:portability:${hashed}`, JSON.stringify({ answer: { isPorted: true, carrier: 'Old' }, storedAt: Date.now() }), 'EX', 600);
      await first.lookupAnswers(UK.absent, ALL);
      await second.lookupAnswers(UK.absent, ALL); // now in second's in-process tier
      sim.resetStats();
      await expect(first.eraser.forget(UK.absent)).resolves.toBe(5); // three v4 records, the v3 answer, the plain v2 one
      // Only the erasure's mark is left under the number's keyed hash (it refuses cache writes that started
      // before the erasure, for an hour); no record.
      const hash = keyedHash(first.config.dataHashKey, UK.absent);
      expect(await redis.keys(`${prefix}*${hash}`)).toEqual([`${prefix}erased:${hash}`]);
      expect(await redis.pttl(`${prefix}erased:${hash}`)).toBeLessThanOrEqual(3600_000);
      expect(await redis.keys(`${prefix}*${UK.absent}`)).toEqual([]);
      // The broadcast reaches the other instance: its next lookup asks the upstream instead of its copy.
      const asked = await eventually(
        () => second.lookupAnswers(UK.absent, NETWORK_ONLY).then(() => sim.stats().requests),
        (requests) => requests > 0,
        5000,
      );
      expect(asked).toBe(1);
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('degrades to the provider when Redis is unreachable, never failing the call', async () => {
    const m = await startProviderModule(hlrLookupsEnv(sim.url, { REDIS_URL: 'redis://127.0.0.1:1', CACHE_KEY_PREFIX: prefix }));
    try {
      sim.resetStats();
      await expect(m.lookupAnswers(UK.normal, NETWORK_ONLY)).resolves.toEqual({ networkStatus: { status: 'CONNECTED', carrier: 'Three' } });
      await expect(m.lookupAnswers(UK.normal, NETWORK_ONLY)).resolves.toEqual({ networkStatus: { status: 'CONNECTED', carrier: 'Three' } });
      expect(sim.stats().byPath['/hlr-lookup']).toBe(2);
      expect(m.lookups.counters.cache.storeErrors).toBeGreaterThan(0);
      await expect(m.health.cache()).resolves.toEqual({ store: 'redis', reachable: false });
    } finally {
      await m.close();
    }
  });
});

describe('sandbox provider', () => {
  let m: ProviderTestModule;
  beforeAll(async () => (m = await startProviderModule({ PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '300' })));
  afterAll(() => m.close());

  it('is chosen by PROVIDER=sandbox and says its answers are simulated', async () => {
    expect(m.provider).toBeInstanceOf(SandboxAdapter);
    await expect(m.health.check()).resolves.toEqual({ reachable: true, providers: [{ provider: 'sandbox', state: 'up', simulated: true, reachable: true }] });
    await expect(m.health.cache()).resolves.toEqual({ store: 'memory', reachable: true });
  });

  it('warns once at start-up that its results are simulated', async () => {
    const warnings: string[] = [];
    const recorder = { log: () => {}, error: () => {}, warn: (message: unknown) => warnings.push(String(message)) };
    const other = await startProviderModule({ PROVIDER: 'sandbox' }, recorder);
    await other.close();
    expect(warnings.filter((message) => /simulated/i.test(message))).toHaveLength(1);
  });

  describeTestNumberTable('sandbox', () => ({ provider: () => m.adapter, module: () => m }));
});

describe('PROVIDER, the shorthand for LOOKUP_PROVIDERS with one entry', () => {
  it('runs any adapter: PROVIDER=twilio-lookup is the Twilio adapter with the id twilio-lookup and its TWILIO_LOOKUP_* settings', async () => {
    const m = await startProviderModule({ PROVIDER: 'twilio-lookup', TWILIO_LOOKUP_URL: 'http://127.0.0.1:9', TWILIO_LOOKUP_KEY: 'AC1', TWILIO_LOOKUP_SECRET: 't' });
    try {
      expect(m.provider).toBeInstanceOf(TwilioLookupAdapter);
      expect(m.provider.upstreams().map((upstream) => upstream.provider)).toEqual(['twilio-lookup']);
    } finally {
      await m.close();
    }
  });
});

describe('hlr-lookups adapter against the upstream simulator', () => {
  let sim: UpstreamSimulator;
  let m: ProviderTestModule;
  beforeAll(async () => {
    sim = await startUpstreamSimulator();
    m = await startProviderModule(hlrLookupsEnv(sim.url));
  });
  afterAll(async () => {
    await m.close();
    await sim.close();
  });

  it('is chosen by PROVIDER=hlr-lookups, is real and reachable', async () => {
    expect(m.provider).toBeInstanceOf(HlrLookupsAdapter);
    await expect(m.health.check()).resolves.toEqual({
      reachable: true,
      providers: [{ provider: 'hlr-lookups', state: 'up', simulated: false, reachable: true, circuit: { interactive: 'closed', batch: 'closed' } }],
    });
  });

  describeTestNumberTable('hlr-lookups', () => ({ provider: () => m.adapter, module: () => m }));

  it('reads every answer of the test-number table within the documented schema, and counts the upstream cost', async () => {
    const adapter = m.provider as HlrLookupsAdapter;
    const invalid = () => adapter.tally.failureCounts().filter((entry) => entry.kind === 'invalid_answer');
    const invalidBefore = invalid();
    const costBefore = new Map(adapter.tally.costByPath());
    for (const number of [UK.normal, UK.absent, UK.undetermined, UK.ported]) {
      await checkFields(adapter, 'network_status', number);
      await checkFields(adapter, 'line_type', number);
      await checkFields(adapter, 'portability', number);
    }
    expect(invalid()).toEqual(invalidBefore);
    // Four answers per endpoint, at the simulator's cost (0.0100 HLR, 0.0050 NT and MNP).
    const added = (path: string) => (adapter.tally.costByPath().get(path) ?? 0) - (costBefore.get(path) ?? 0);
    expect(added('/hlr-lookup')).toBeCloseTo(0.04, 9);
    expect(added('/nt-lookup')).toBeCloseTo(0.02, 9);
    expect(added('/mnp-lookup')).toBeCloseTo(0.02, 9);
  });

  it('also works with the real API’s /api/v2 base path', async () => {
    const other = await startProviderModule(hlrLookupsEnv(`${sim.url}/api/v2/`));
    try {
      await expect(checkFields(other.adapter, 'network_status', UK.normal)).resolves.toEqual({ status: 'CONNECTED', carrier: 'Three' });
    } finally {
      await other.close();
    }
  });

  it('turns a bad secret (401) into unavailable, and LookupService into PROVIDER_UNAVAILABLE', async () => {
    const wrong = await startProviderModule(hlrLookupsEnv(sim.url, { HLR_LOOKUPS_SECRET: 'not-the-secret' }));
    try {
      expect(await unavailableReason(checkFields(wrong.adapter, 'network_status', UK.normal))).toBe('unauthorized');
      await expectProviderUnavailable(wrong.lookupAnswers(UK.normal, ALL));
      await expect(wrong.health.check()).resolves.toMatchObject({ reachable: false });
      expect(wrong.lookups.counters.lookups.network_status.unauthorized).toBe(1);
    } finally {
      await wrong.close();
    }
  });

  it('refuses at the simulator a missing signature, a stale timestamp and a wrong key', async () => {
    const body = JSON.stringify({ msisdn: UK.normal });
    const post = (headers: Record<string, string>) =>
      fetch(`${sim.url}/hlr-lookup`, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });
    const credentials = { key: 'sim-key', secret: 'sim-secret' };

    expect((await post(digestHeaders(credentials, '/hlr-lookup', 'POST', body))).status).toBe(200);
    expect((await post({})).status).toBe(401);
    expect((await post(digestHeaders(credentials, '/hlr-lookup', 'POST', body, Date.now() - 6 * 60_000))).status).toBe(401);
    expect((await post(digestHeaders({ ...credentials, key: 'other' }, '/hlr-lookup', 'POST', body))).status).toBe(401);
    expect((await post(digestHeaders(credentials, '/hlr-lookup', 'POST', `${body} `))).status).toBe(401);
  });

  it('is unavailable when the simulator is stopped', async () => {
    const stopped = await startUpstreamSimulator();
    const url = stopped.url;
    await stopped.close();
    const m2 = await startProviderModule(hlrLookupsEnv(url));
    try {
      expect(await unavailableReason(checkFields(m2.adapter, 'network_status', UK.normal))).toBe('network');
      await expectProviderUnavailable(m2.lookupAnswers(UK.normal, ALL));
      await expect(m2.health.check()).resolves.toMatchObject({ reachable: false, providers: [{ provider: 'hlr-lookups', reachable: false }] });
    } finally {
      await m2.close();
    }
  });

  it('retries once after a connection reset, and never after an HTTP error', async () => {
    let connections = 0;
    const flaky = net.createServer((socket) => {
      connections += 1;
      if (connections === 1) return socket.resetAndDestroy();
      const upstream = net.connect(sim.port, '127.0.0.1');
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
    const port = (flaky.address() as net.AddressInfo).port;
    const m2 = await startProviderModule(hlrLookupsEnv(`http://127.0.0.1:${port}`));
    try {
      await expect(checkFields(m2.adapter, 'network_status', UK.normal)).resolves.toEqual({ status: 'CONNECTED', carrier: 'Three' });
      expect(connections).toBe(2);

      sim.resetStats();
      expect(await unavailableReason(checkFields(m2.adapter, 'network_status', UK.failing))).toBe('upstream_error');
      expect(sim.stats().byPath['/hlr-lookup']).toBe(1);
    } finally {
      await m2.close();
      flaky.close();
    }
  });

  it('opens the circuit once the failure rate passes the threshold with the minimum calls, stops calling the upstream, and recovers after the half-open delay', async () => {
    const own = await startUpstreamSimulator();
    // The half-open delay is the Clock's: the test moves it instead of waiting for it.
    const clock = new ManualClock();
    const m2 = await startProviderModule(
      hlrLookupsEnv(own.url, { PROVIDER_BREAKER_FAILURE_RATE: '0.5', PROVIDER_BREAKER_WINDOW_MS: '10000', PROVIDER_BREAKER_MIN_CALLS: '4', PROVIDER_BREAKER_HALF_OPEN_MS: '300' }),
      ['error'],
      { clock },
    );
    try {
      const adapter = m2.provider as HlrLookupsAdapter;
      own.setOptions({ outage: true });
      for (let i = 0; i < 3; i += 1) expect(await unavailableReason(checkFields(adapter, 'network_status', UK.normal))).toBe('upstream_error');
      expect(adapter.circuitState('interactive')).toBe('closed'); // fewer calls than the minimum: no verdict yet
      expect(await unavailableReason(checkFields(adapter, 'network_status', UK.normal))).toBe('upstream_error');
      expect(adapter.circuitState('interactive')).toBe('open');
      expect(adapter.circuitState('batch')).toBe('closed'); // the other lane has its own breaker

      own.resetStats();
      expect(await unavailableReason(checkFields(adapter, 'network_status', UK.normal))).toBe('circuit_open');
      await expectProviderUnavailable(m2.lookupAnswers(UK.normal, ALL));
      expect(own.stats().requests).toBe(0);

      own.setOptions({ outage: false });
      await clock.advance(299);
      expect(await unavailableReason(checkFields(adapter, 'network_status', UK.normal))).toBe('circuit_open'); // not due yet
      expect(own.stats().requests).toBe(0);
      await clock.advance(1);
      await expect(checkFields(adapter, 'network_status', UK.normal)).resolves.toEqual({ status: 'CONNECTED', carrier: 'Three' });
      expect(adapter.circuitState('interactive')).toBe('closed');
      expect(own.stats().requests).toBe(1);
    } finally {
      await m2.close();
      await own.close();
    }
  });
});

/**
 * The upstream deadline of the cases below, which are not about timeouts: the simulator answers from this
 * test's own process, and 20 concurrent lookups past hlrLookupsEnv's 300 ms ended PROVIDER_UNAVAILABLE in a
 * clean-clone CI run.
 */
const NOT_ABOUT_TIMEOUTS_MS = '10000';

describe('LookupService: cache and single flight (hlr-lookups against the simulator)', () => {
  let sim: UpstreamSimulator;
  beforeAll(async () => (sim = await startUpstreamSimulator()));
  afterAll(() => sim.close());
  beforeEach(() => sim.setOptions({ latencyMs: 0, outage: false }));

  const upstreamCalls = () => {
    const { byPath } = sim.stats();
    return { hlr: byPath['/hlr-lookup'] ?? 0, nt: byPath['/nt-lookup'] ?? 0, mnp: byPath['/mnp-lookup'] ?? 0 };
  };

  it('answers a repeated lookup from the cache without reaching the upstream again', async () => {
    const m = await startProviderModule(hlrLookupsEnv(sim.url, { PROVIDER_TIMEOUT_MS: NOT_ABOUT_TIMEOUTS_MS }));
    try {
      sim.resetStats();
      const first = await m.lookupAnswers(UK.normal, ALL);
      const second = await m.lookupAnswers(UK.normal, ALL);
      expect(second).toEqual(first);
      expect(upstreamCalls()).toEqual({ hlr: 1, nt: 1, mnp: 1 });
      expect(m.lookups.counters.cache).toMatchObject({ hits: 3, misses: 3, store: 'memory' });
      expect(m.lookups.counters.lookups.network_status.ok).toBe(1);

      // Checks are cached separately: enabling only line type later still hits.
      await m.lookupAnswers(UK.normal, { network_status: false, line_type: true, portability: false });
      expect(upstreamCalls()).toEqual({ hlr: 1, nt: 1, mnp: 1 });
    } finally {
      await m.close();
    }
  });

  it('sends 20 concurrent identical lookups to the upstream once per check', async () => {
    const m = await startProviderModule(hlrLookupsEnv(sim.url, { PROVIDER_TIMEOUT_MS: NOT_ABOUT_TIMEOUTS_MS }));
    try {
      sim.resetStats();
      sim.setOptions({ latencyMs: 50 });
      const answers = await Promise.all(Array.from({ length: 20 }, () => m.lookupAnswers('+4915123456789', ALL)));
      expect(new Set(answers.map((answer) => JSON.stringify(answer))).size).toBe(1);
      expect(answers[0]).toEqual({
        networkStatus: { status: 'CONNECTED', carrier: 'T-Mobile' },
        numberType: { lineType: 'MOBILE' },
        portability: { isPorted: false, carrier: 'T-Mobile' },
      });
      expect(upstreamCalls()).toEqual({ hlr: 1, nt: 1, mnp: 1 });
      expect(m.lookups.counters.singleFlightShared).toBe(19 * 3);
    } finally {
      await m.close();
    }
  });

  it('looks a cached number up again when the caller asks for a fresher answer, and refreshes the cache', async () => {
    const m = await startProviderModule(hlrLookupsEnv(sim.url, { PROVIDER_TIMEOUT_MS: NOT_ABOUT_TIMEOUTS_MS }));
    try {
      sim.resetStats();
      await m.lookupAnswers(UK.normal, NETWORK_ONLY);
      await m.lookupAnswers(UK.normal, NETWORK_ONLY, { maxAgeSeconds: 3600 }); // young enough: the cache
      expect(upstreamCalls().hlr).toBe(1);
      await m.lookupAnswers(UK.normal, NETWORK_ONLY, { maxAgeSeconds: 0 }); // live
      await m.lookupAnswers(UK.normal, NETWORK_ONLY, { maxAgeSeconds: 0 });
      expect(upstreamCalls().hlr).toBe(3);
      await m.lookupAnswers(UK.normal, NETWORK_ONLY); // the refreshed entry
      expect(upstreamCalls().hlr).toBe(3);
    } finally {
      await m.close();
    }
  });

  it('does not cache failures: the next lookup asks the upstream again', async () => {
    const m = await startProviderModule(hlrLookupsEnv(sim.url, { PROVIDER_TIMEOUT_MS: NOT_ABOUT_TIMEOUTS_MS }));
    try {
      sim.resetStats();
      sim.setOptions({ outage: true });
      await expectProviderUnavailable(m.lookupAnswers('+33612345678', NETWORK_ONLY));
      sim.setOptions({ outage: false });
      await expect(m.lookupAnswers('+33612345678', NETWORK_ONLY)).resolves.toEqual({
        networkStatus: { status: 'CONNECTED', carrier: 'SFR' },
      });
      expect(upstreamCalls().hlr).toBe(2);
      expect(m.lookups.counters.lookups.network_status).toMatchObject({ ok: 1, upstream_error: 1 });
    } finally {
      await m.close();
    }
  });

  it('keeps the answers of the checks that succeeded when another one fails', async () => {
    const m = await startProviderModule(hlrLookupsEnv(sim.url, { PROVIDER_TIMEOUT_MS: NOT_ABOUT_TIMEOUTS_MS }));
    try {
      await m.lookupAnswers(UK.normal, NETWORK_ONLY);
      sim.resetStats();
      sim.setOptions({ outage: true });
      await expectProviderUnavailable(m.lookupAnswers(UK.normal, ALL));
      expect(upstreamCalls()).toEqual({ hlr: 0, nt: 1, mnp: 1 });
    } finally {
      await m.close();
    }
  });

  it('bounds the in-memory cache to CACHE_MAX_ENTRIES (least recently used goes first)', async () => {
    const m = await startProviderModule(hlrLookupsEnv(sim.url, { CACHE_MAX_ENTRIES: '2', PROVIDER_TIMEOUT_MS: NOT_ABOUT_TIMEOUTS_MS }));
    try {
      sim.resetStats();
      for (const number of ['+447400123451', '+447400123452', '+447400123453', '+447400123451']) {
        await m.lookupAnswers(number, NETWORK_ONLY);
      }
      expect(upstreamCalls().hlr).toBe(4);
    } finally {
      await m.close();
    }
  });

  it('does not cache a check whose TTL is 0', async () => {
    const m = await startProviderModule(hlrLookupsEnv(sim.url, { CACHE_TTL_NETWORK_STATUS_SECONDS: '0', PROVIDER_TIMEOUT_MS: NOT_ABOUT_TIMEOUTS_MS }));
    try {
      sim.resetStats();
      await m.lookupAnswers(UK.normal, NETWORK_ONLY);
      await m.lookupAnswers(UK.normal, NETWORK_ONLY);
      expect(upstreamCalls().hlr).toBe(2);
    } finally {
      await m.close();
    }
  });
});
