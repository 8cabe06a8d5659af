import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { startTwilioSimulator, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { startTestApp, TestApp } from './helpers/test-app';
import { CHECKS_BOTH_UPSTREAMS_OFFER, twoUpstreamsEnv } from './provider-helpers';

const PRIMARY_PRICE = 0.01;
const BACKUP_PRICE = 0.004;

/** The value of one series of the /metrics text (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string>): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  const line = text.split('\n').find((row) => {
    if (!row.startsWith(`${name}{`)) return false;
    const rowLabels = row.slice(name.length + 1, row.indexOf('}')).split(',');
    return wanted.every((label) => rowLabels.includes(label)) && rowLabels.length === wanted.length;
  });
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/**
 * Per-provider metrics (issue 23 point 6): answers per provider and check, failures by provider, check
 * and reason, attempt durations per provider, the configured cost (`<ID>_PRICE`) per attempt sent; never
 * a phone number. Each case reads the change its calls made.
 */
describe('per-provider metrics (LOOKUP_PROVIDERS=primary,backup)', () => {
  let primary: UpstreamSimulator;
  let backup: TwilioSimulator;
  let t: TestApp;
  let account: TestAccount;
  const used: string[] = [];
  let block = 40;
  const fresh = () => {
    const phone = distinctNumbers(1, block++)[0];
    used.push(phone);
    return phone;
  };

  beforeAll(async () => {
    [primary, backup] = await Promise.all([startUpstreamSimulator(), startTwilioSimulator()]);
    t = await startTestApp(
      twoUpstreamsEnv(primary.url, backup.url, {
        PRIMARY_PRICE: String(PRIMARY_PRICE),
        BACKUP_PRICE: String(BACKUP_PRICE),
        PROVIDER_BREAKER_MIN_CALLS: '1000',
        // Failures here must not reorder the providers: each case expects the primary asked first.
        LOOKUP_DEMOTE_MIN_CALLS: '500',
        LOOKUP_DEMOTE_WINDOW_CALLS: '500',
      }),
    );
    account = await createAccount(t, { credits: 10_000 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send(CHECKS_BOTH_UPSTREAMS_OFFER).expect(200);
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([primary?.close(), backup?.close()]);
  });
  afterEach(() => primary.setOptions({ outage: false, fault: null }));

  const metrics = async () => (await request(t.http).get('/metrics').expect(200)).text;
  const filter = async () => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: fresh() }).expect(200);
  /** How much each series changed over `run`. */
  const delta = async (run: () => Promise<unknown>, series: Array<[string, Record<string, string>]>) => {
    const before = await metrics();
    await run();
    const after = await metrics();
    return series.map(([name, labels]) => Math.round((sample(after, name, labels) - sample(before, name, labels)) * 1e6) / 1e6);
  };

  it('a healthy primary: its answers per check, its attempt durations, and its price per attempt', async () => {
    const changes = await delta(filter, [
      ['phone_filter_provider_answers_total', { provider: 'primary', check: 'network_status' }],
      ['phone_filter_provider_answers_total', { provider: 'primary', check: 'line_type' }],
      ['phone_filter_provider_answers_total', { provider: 'backup', check: 'network_status' }],
      ['phone_filter_provider_attempt_duration_seconds_count', { provider: 'primary', check: 'network_status', outcome: 'answered' }],
      ['phone_filter_provider_cost_total', { provider: 'primary' }],
      ['phone_filter_provider_cost_total', { provider: 'backup' }],
    ]);
    expect(changes).toEqual([1, 1, 0, 1, 2 * PRIMARY_PRICE, 0]);
  });

  it.each([
    ['down (HTTP 503)', { outage: true }, 'http_5xx'],
    ['answering 500', { fault: 'http-500' as const }, 'http_5xx'],
    ['timing out', { fault: 'slow' as const }, 'timeout'],
    ['answering outside its schema', { fault: 'wrong-type' as const }, 'invalid_answer'],
    ['answering 429', { fault: 'http-429' as const }, 'rate_limited'],
  ])('primary %s: its failures by reason, the backup’s answers, both providers’ cost', async (_, fault, reason) => {
    primary.setOptions(fault);
    const changes = await delta(filter, [
      ['phone_filter_provider_failures_total', { provider: 'primary', check: 'network_status', reason }],
      ['phone_filter_provider_failures_total', { provider: 'primary', check: 'line_type', reason }],
      ['phone_filter_provider_answers_total', { provider: 'backup', check: 'network_status' }],
      ['phone_filter_provider_answers_total', { provider: 'backup', check: 'line_type' }],
      ['phone_filter_provider_attempt_duration_seconds_count', { provider: 'primary', check: 'line_type', outcome: 'failed' }],
      ['phone_filter_provider_cost_total', { provider: 'primary' }],
      ['phone_filter_provider_cost_total', { provider: 'backup' }],
      ['phone_filter_upstream_failovers_total', { provider: 'primary' }],
    ]);
    expect(changes).toEqual([1, 1, 1, 1, 1, 2 * PRIMARY_PRICE, 2 * BACKUP_PRICE, 2]);
  });

  it('after a 429 the primary is held back without a request: a failure of its own reason, no cost, no duration', async () => {
    // The previous case's 429 holds the primary's lane for its Retry-After (1 s).
    const changes = await delta(filter, [
      ['phone_filter_provider_failures_total', { provider: 'primary', check: 'network_status', reason: 'rate_limit_wait' }],
      ['phone_filter_provider_attempt_duration_seconds_count', { provider: 'primary', check: 'network_status', outcome: 'failed' }],
      ['phone_filter_provider_cost_total', { provider: 'primary' }],
      ['phone_filter_provider_answers_total', { provider: 'backup', check: 'network_status' }],
    ]);
    expect(changes).toEqual([1, 0, 0, 1]);
  });

  it('never carries a phone number: labels are provider ids, checks, reasons and outcomes', async () => {
    const text = await metrics();
    expect(used.length).toBeGreaterThan(5);
    for (const phone of used) expect({ phone, found: text.includes(phone.slice(1)) }).toEqual({ phone, found: false });
    const labels = new Set([...text.matchAll(/^phone_filter_provider_\w+\{([^}]*)\}/gm)].flatMap((match) => match[1].split(',').map((pair) => pair.split('=')[0])));
    expect([...labels].sort()).toEqual(['check', 'lane', 'le', 'outcome', 'provider', 'reason']);
  });
});
