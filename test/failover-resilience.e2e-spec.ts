import { LoggerService } from '@nestjs/common';
import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { startTwilioSimulator, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { freePort } from '../src/common/net';
import { createAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { startTestApp } from './helpers/test-app';
import { CHECKS_BOTH_UPSTREAMS_OFFER, startProviderModule, twoUpstreamsEnv } from './provider-helpers';

const BOTH = { network_status: true, line_type: true, portability: false };

/** Both simulators, the app in front of them (LOOKUP_PROVIDERS=primary,backup) and an account asking the checks both offer. */
async function startFailoverApp(extra: Record<string, string>, faults: { slowMs?: number } = {}) {
  const fault = faults.slowMs === undefined ? {} : { fault: 'slow' as const, slowMs: faults.slowMs };
  const [primary, backup] = await Promise.all([startUpstreamSimulator(fault), startTwilioSimulator(fault)]);
  const t = await startTestApp(twoUpstreamsEnv(primary.url, backup.url, extra));
  const account = await createAccount(t, { credits: 10_000 });
  await request(t.http).patch('/api/v1/settings').set(account.auth).send(CHECKS_BOTH_UPSTREAMS_OFFER).expect(200);
  return {
    primary,
    backup,
    t,
    account,
    close: async () => {
      await t.close();
      await Promise.all([primary.close(), backup.close()]);
    },
  };
}

/**
 * Review findings on the failover layer (fix-resilience): breakers that never closed, numbers in messages, no call budget, schema
 * failures not counted. Breakers that get their half-open trial and close again (with one upstream recovered, and with every one
 * open) are proven on the clock in test/medium/provider/breakers.medium-spec.ts.
 */
describe('failover: a schema-breaking 200 counts against the breaker', () => {
  let primary: UpstreamSimulator;
  let backup: TwilioSimulator;

  beforeAll(async () => {
    [primary, backup] = await Promise.all([startUpstreamSimulator({ fault: 'wrong-type' }), startTwilioSimulator({ fault: 'wrong-type' })]);
  });
  afterAll(async () => {
    await Promise.all([primary?.close(), backup?.close()]);
  });

  it.each([
    ['primary', 'backup', 50],
    ['backup', 'primary', 51],
  ] as const)('%s answering 200s off its schema: its breaker opens (calls refused, refunded by the caller)', async (id, other, block) => {
    // The faulty one asked first for +44 numbers; the other (just as faulty) only after it.
    const routing = JSON.stringify({ countries: { '44': [id, other] } });
    const t = await startProviderModule(twoUpstreamsEnv(primary.url, backup.url, { PROVIDER_BREAKER_MIN_CALLS: '4', PROVIDER_BREAKER_HALF_OPEN_MS: '60000', LOOKUP_ROUTING: routing }));
    try {
      const upstream = t.provider.upstreams().find((entry) => entry.provider === id)!;
      for (const e164 of distinctNumbers(8, block)) {
        await expect(t.lookups.lookUp(e164, BOTH, { maxAgeSeconds: 0 })).rejects.toThrow();
        if (upstream.circuitState('interactive') === 'open') break;
      }
      expect(upstream.circuitState('interactive')).toBe('open');
    } finally {
      await t.close();
    }
  });
});

describe('failover: one time budget per call (LOOKUP_CALL_BUDGET_MS)', () => {
  let app: Awaited<ReturnType<typeof startFailoverApp>>;

  // Each attempt may take 500 ms; the whole call 500 ms: once the primary timed out, nothing is left for the backup.
  beforeAll(async () => (app = await startFailoverApp({ PROVIDER_TIMEOUT_MS: '500', LOOKUP_CALL_BUDGET_MS: '500' }, { slowMs: 10_000 })));
  afterAll(() => app?.close());

  it('two slow upstreams: 503 refunded, the backup not asked once the budget is spent', async () => {
    const { primary, backup, t, account } = app;
    const balance = async () => (await request(t.http).get('/api/v1/balance').set(account.auth).expect(200)).body.balance as number;
    const before = await balance();
    const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: distinctNumbers(1, 52)[0] }).expect(503);
    expect(res.body.error.code).toBe('PROVIDER_UNAVAILABLE');
    expect({ primary: primary.stats().requests, backup: backup.stats().requests }).toEqual({ primary: 2, backup: 0 });
    expect(await balance()).toBe(before);
  });
});

describe('failover: the last attempt ends with the call budget', () => {
  let app: Awaited<ReturnType<typeof startFailoverApp>>;

  // Each attempt may take 1000 ms, the whole call 1200 ms; the primary never answers in time.
  beforeAll(async () => (app = await startFailoverApp({ PROVIDER_TIMEOUT_MS: '1000', LOOKUP_CALL_BUDGET_MS: '1200' }, { slowMs: 10_000 })));
  afterAll(() => app?.close());

  it('a backup that would answer within its own deadline, but not within what is left of the budget: 503 refunded', async () => {
    const { primary, backup, t, account } = app;
    backup.setOptions({ slowMs: 600 }); // within PROVIDER_TIMEOUT_MS, beyond the ~200 ms the primary's timeout left
    const balance = async () => (await request(t.http).get('/api/v1/balance').set(account.auth).expect(200)).body.balance as number;
    const before = await balance();
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: distinctNumbers(1, 53)[0] }).expect(503);
    expect({ primary: primary.stats().requests, backup: backup.stats().requests }).toEqual({ primary: 2, backup: 2 });
    expect(await balance()).toBe(before);
  });
});

describe('no phone number in the messages of failed Twilio lookups', () => {
  const captured: string[] = [];
  const keep = (...args: unknown[]) => void captured.push(args.map((arg) => (typeof arg === 'string' ? arg : JSON.stringify(arg, Object.getOwnPropertyNames(arg ?? {})))).join(' '));
  const logger: LoggerService = { log: keep, warn: keep, error: keep, debug: keep, verbose: keep, fatal: keep };
  const e164 = '+447400123456';
  const digits = e164.slice(1);

  const failedLookup = async (backupUrl: string) => {
    const closed = `http://127.0.0.1:${await freePort()}`;
    const t = await startProviderModule(twoUpstreamsEnv(closed, backupUrl, { LOG_LEVEL: 'debug' }), logger);
    try {
      const error = await t.lookups.lookUp(e164, BOTH, { maxAgeSeconds: 0 }).then(
        () => undefined,
        (failure: Error) => failure,
      );
      expect(error).toBeDefined();
      return `${String(error?.message)} ${JSON.stringify(error?.cause)} ${captured.join('\n')}`;
    } finally {
      await t.close();
    }
  };

  it('connection refused: neither the error nor the log carries the number (the request path has it)', async () => {
    const text = await failedLookup(`http://127.0.0.1:${await freePort()}`);
    expect(text).toContain('ECONNREFUSED');
    expect(text).not.toContain(digits);
    expect(text).not.toContain(digits.slice(-7));
  });

  it('HTTP 429: neither the error nor the log carries the number', async () => {
    const sim = await startTwilioSimulator({ fault: 'http-429' });
    try {
      const text = await failedLookup(sim.url);
      expect(text).toContain('429');
      expect(text).not.toContain(digits);
      expect(text).not.toContain(digits.slice(-7));
    } finally {
      await sim.close();
    }
  });
});
