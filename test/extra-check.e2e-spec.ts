import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { createAccount } from './factories/accounts';
import { csvRecords, distinctNumbers, waitForBulkJob } from './helpers/bulk';
import { DeviceSwapTestAdapter, deviceSwapRegistration } from './helpers/device-swap.check';
import { startTestApp, TestApp } from './helpers/test-app';
import { expectError } from './helpers/expect-error';
import { waitForRound } from './helpers/watchlists';

/**
 * Adding a check is one definition plus its adapter, registered from outside src/: the "device_swap"
 * check of test/helpers/device-swap.check.ts goes through settings, prices, charging, bulk results and
 * CSV, watchlist changes and the OpenAPI document, while /filter keeps its six fields.
 */
describe('a check registered from a test module (device_swap)', () => {
  let t: TestApp;
  const adapter = new DeviceSwapTestAdapter();
  const SIX_FIELDS = ['carrier', 'country', 'is_ported', 'line_type', 'status', 'valid'];

  beforeAll(async () => {
    t = await startTestApp(
      {
        PROVIDER: 'sandbox',
        // Its price comes from the variable its definition names (default 3).
        PRICE_DEVICE_SWAP: '8',
        // The admin API on, so that /docs-json lists it (and its AccountChecksDto) too.
        ADMIN_TOKEN: 'extra-check-admin-token',
        WATCHLIST_SCHEDULE_GROUP: `extra-check-${Date.now()}`,
        WATCHLIST_POLL_INTERVAL_MS: '100',
      },
      { checks: [deviceSwapRegistration(adapter)] },
    );
  });
  afterAll(async () => {
    await t?.close();
  });

  const balanceOf = async (auth: { Authorization: string }) => (await request(t.http).get('/api/v1/balance').set(auth).expect(200)).body.balance as number;

  it('is off for a new account, and PATCH /api/v1/settings turns it on with its price in cost_per_call', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const before = await request(t.http).get('/api/v1/settings').set(account.auth).expect(200);
    expect(before.body.checks).toEqual({ network_status: true, line_type: false, portability: false, sim_swap: false, device_swap: false });
    expect(before.body.cost_per_call).toBe(4);

    const patched = await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { device_swap: true } }).expect(200);
    expect(patched.body.checks).toEqual({ network_status: true, line_type: false, portability: false, sim_swap: false, device_swap: true });
    expect(patched.body.cost_per_call).toBe(4 + 8);
    const read = await request(t.http).get('/api/v1/settings').set(account.auth).expect(200);
    expect(read.body).toMatchObject({ checks: { device_swap: true }, cost_per_call: 12 });
  });

  it('refuses an unknown check name and a non-boolean value with 400, naming them', async () => {
    const account = await createAccount(t, { credits: 10 });
    const unknown = await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { device_swop: true } });
    expectError(unknown, 400, 'INVALID_REQUEST');
    expect(unknown.body.error.message).toContain('unknown field "checks.device_swop"');
    const wrongType = await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { device_swap: 'yes' } });
    expectError(wrongType, 400, 'INVALID_REQUEST');
    expect(wrongType.body.error.message).toBe('checks.device_swap must be a boolean value.');
  });

  it('charges a /filter call for it, asks its adapter, and keeps /filter at exactly six fields', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { device_swap: true } }).expect(200);
    const [phone] = distinctNumbers(1, 61);
    const asked = adapter.asked.length;

    const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone }).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(SIX_FIELDS);
    expect(res.body).toMatchObject({ country: 'GB', valid: true, status: 'CONNECTED' });
    expect(adapter.asked.slice(asked)).toEqual([phone]);
    expect(await balanceOf(account.auth)).toBe(1000 - 12);
    const usage = await request(t.http).get('/api/v1/usage').set(account.auth).expect(200);
    expect(usage.body.entries[0]).toMatchObject({ type: 'CHARGE', amount: -12 });

    // Only the device_swap check on: still the six fields, neutral where no enabled check fills them; 8 credits.
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { network_status: false } }).expect(200);
    const alone = await request(t.http).post('/api/v1/filter').set(account.auth).set('Cache-Control', 'no-cache').send({ phone }).expect(200);
    expect(alone.body).toEqual({ country: 'GB', valid: true, status: 'UNDETERMINED', carrier: null, line_type: 'UNKNOWN', is_ported: false });
    expect(await balanceOf(account.auth)).toBe(1000 - 12 - 8);
  });

  it('shows its field in bulk results and as a column of the bulk CSV, reserving its price per number', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { device_swap: true } }).expect(200);
    const phones = distinctNumbers(2, 62);
    const accepted = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones }).expect(202);
    expect(accepted.body.cost).toBe(2 * 12);
    const job = await waitForBulkJob(t.http, account.auth, accepted.body.id);
    expect(job.results).toEqual(
      phones.map((phone) => ({
        phone,
        result: expect.objectContaining({ status: 'CONNECTED', device_swapped: false }),
        // A registered check names its own adapter as the provider that answered it.
        answered_by: expect.objectContaining({ device_swap: { provider: 'device-swap-test', observed_at: expect.any(String) } }),
      })),
    );
    const results = job.results as Array<{ result: Record<string, unknown> }>;
    expect(Object.keys(results[0].result).sort()).toEqual([...SIX_FIELDS, 'device_swapped'].sort());
    expect(await balanceOf(account.auth)).toBe(1000 - 24);

    const csv = await request(t.http).get(`/api/v1/filter/bulk/${accepted.body.id}/results.csv`).set(account.auth).expect(200);
    const { header, rows } = csvRecords(csv.text);
    // The job's checks (network status and device_swap): the six fields, its field, then their provenance.
    expect(header.join(',')).toBe(
      'phone,reference,country,valid,status,carrier,line_type,is_ported,device_swapped,error_code,error_message,network_status_provider,network_status_observed_at,device_swap_provider,device_swap_observed_at',
    );
    expect(rows.map((row) => [row.device_swapped, row.device_swap_provider])).toEqual([
      ['false', 'device-swap-test'],
      ['false', 'device-swap-test'],
    ]);
  });

  it('reports a change of its field between two watchlist rounds', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { device_swap: true } }).expect(200);
    const [phone] = distinctNumbers(1, 63);
    const created = await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones: [phone], interval: 'weekly' }).expect(201);
    expect(created.body.cost_per_round).toBe(12);
    const id = created.body.id as string;
    const first = await waitForRound(t.http, account.auth, id, 1);
    expect(first.entries[0].result).toMatchObject({ status: 'CONNECTED', device_swapped: false });

    await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    const second = await waitForRound(t.http, account.auth, id, 2);
    expect(second.entries[0].result).toMatchObject({ device_swapped: true });
    const changes = await request(t.http).get(`/api/v1/watchlists/${id}/changes`).set(account.auth).expect(200);
    // The change names the answer of the check that produced the field: the registered check's own adapter.
    const origin = (second.entries[0].answered_by as Record<string, unknown>).device_swap;
    expect(origin).toEqual({ provider: 'device-swap-test', observed_at: expect.any(String) });
    expect(changes.body.changes).toEqual([{ phone, reference: null, field: 'device_swapped', before: false, after: true, answered_by: origin, round: 2, detected_at: expect.any(String) }]);
    expect(await balanceOf(account.auth)).toBe(1000 - 2 * 12);
  });

  it('is documented from its definition: the settings schemas and the checks table name it with its default price', async () => {
    const document = (await request(t.http).get('/docs-json').expect(200)).body;
    expect(document.components.schemas.ChecksDto.properties.device_swap).toEqual({
      type: 'boolean',
      example: false,
      description: 'Device swap (last 7 days) (device_swapped). Default off; 3 credits by default.',
    });
    expect(document.components.schemas.ChecksDto.required).toContain('device_swap');
    expect(document.components.schemas.ChecksPatchDto.properties).toHaveProperty('device_swap');
    expect(document.components.schemas.AccountChecksDto.properties).toHaveProperty('device_swap');
    expect(document.paths['/api/v1/settings'].get.description).toContain('| Device swap (last 7 days) | `device_swap` | off | 3 | device_swapped |');
    expect(document.components.schemas.WatchlistChangeDto.properties.field.enum).toEqual(['status', 'carrier', 'line_type', 'is_ported', 'valid', 'sim_swapped', 'last_sim_swap_at', 'device_swapped']);
    expect(Object.keys(document.components.schemas.PhoneAnswerDto.properties).sort()).toEqual(SIX_FIELDS);
  });
});

describe('registering a check changes no existing account\'s bulk CSV', () => {
  const apps: TestApp[] = [];
  afterAll(async () => {
    for (const app of apps) await app.close();
  });

  /** Submits a job of `phones` for the account and answers its completed CSV. */
  async function csvOfNewJob(t: TestApp, auth: { Authorization: string }, phones: string[]): Promise<{ id: string; text: string }> {
    const accepted = await request(t.http).post('/api/v1/filter/bulk').set(auth).send({ phones }).expect(202);
    await waitForBulkJob(t.http, auth, accepted.body.id);
    return { id: accepted.body.id, text: (await request(t.http).get(`/api/v1/filter/bulk/${accepted.body.id}/results.csv`).set(auth).expect(200)).text };
  }

  it('keeps the header of an account that does not turn it on, for its new jobs and its old ones', async () => {
    // One queue of this test's own, worked only by the app of the moment (before, then after).
    const env = { PROVIDER: 'sandbox', BULK_QUEUE_NAME: `extra-check-csv-${randomBytes(4).toString('hex')}`, BULK_POLL_INTERVAL_SECONDS: '0.5' };
    const before = await startTestApp(env);
    apps.push(before);
    const account = await createAccount(before, { credits: 1000 });
    await request(before.http).patch('/api/v1/settings').set(account.auth).send({ checks: { line_type: true } }).expect(200);
    const [first, second] = distinctNumbers(2, 64);
    const old = await csvOfNewJob(before, account.auth, [first]);
    await before.close();
    apps.pop();

    const after = await startTestApp(env, { checks: [deviceSwapRegistration(new DeviceSwapTestAdapter())] });
    apps.push(after);
    const settings = await request(after.http).get('/api/v1/settings').set(account.auth).expect(200);
    expect(settings.body.checks).toEqual({ network_status: true, line_type: true, portability: false, sim_swap: false, device_swap: false });
    const renewed = await csvOfNewJob(after, account.auth, [second]);
    expect(csvRecords(renewed.text).header).toEqual(csvRecords(old.text).header);
    expect(csvRecords(old.text).header.join(',')).toBe(
      'phone,reference,country,valid,status,carrier,line_type,is_ported,error_code,error_message,network_status_provider,network_status_observed_at,line_type_provider,line_type_observed_at',
    );
    // The job submitted before the check existed is downloaded as it was.
    expect((await request(after.http).get(`/api/v1/filter/bulk/${old.id}/results.csv`).set(account.auth).expect(200)).text).toBe(old.text);
  });
});
