import request from 'supertest';
import { CreditsRepository } from '../src/credits/credits.repository';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { startTwilioSimulator, TwilioSimulator } from '../tools/twilio-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { distinctNumbers, waitForBulkJob } from './helpers/bulk';
import { CallbackReceiver, startReceiver } from './helpers/callback-receiver';
import { eventually } from './helpers/eventually';
import { waitForRound } from './helpers/watchlists';
import { startTestApp, TestApp } from './helpers/test-app';
import { CHECKS_BOTH_UPSTREAMS_OFFER, twoUpstreamsEnv } from './provider-helpers';

type Origin = { provider: string; observed_at: string };
type AnsweredBy = Record<string, Origin>;
type UsageEntry = { id: string; type: string; phone: string | null; answered_by: AnsweredBy | null };

/** The CSV columns a bulk job had before provenance (issue 23): kept first, in this order. */
const COLUMNS_BEFORE = ['phone', 'reference', 'country', 'valid', 'status', 'carrier', 'line_type', 'is_ported', 'error_code', 'error_message'];
/** The provenance columns of a job whose account has network_status and line_type on (a job's columns are its checks'). */
const PROVENANCE_COLUMNS = ['network_status_provider', 'network_status_observed_at', 'line_type_provider', 'line_type_observed_at'];

/**
 * Provenance (issue 23, point 4): which provider answered each check and when, kept with the ledger's
 * CHARGE row, bulk entries and watchlist answers and changes, shown by GET /api/v1/usage, bulk results
 * (JSON and CSV) and the watchlist APIs, never in /filter's six fields. Two real upstreams behind
 * LOOKUP_PROVIDERS (hlr-lookups as `primary`, Twilio Lookup as `backup`), each against its simulator.
 */
describe('provenance: which provider answered each check, and when', () => {
  let primary: UpstreamSimulator;
  let backup: TwilioSimulator;
  let receiver: CallbackReceiver;
  let t: TestApp;
  let account: TestAccount;
  let block = 30;
  const fresh = () => distinctNumbers(1, block++)[0];

  beforeAll(async () => {
    [primary, backup, receiver] = await Promise.all([startUpstreamSimulator(), startTwilioSimulator(), startReceiver([], '/hooks/watchlist')]);
    const run = Math.random().toString(16).slice(2, 10);
    t = await startTestApp(
      twoUpstreamsEnv(primary.url, backup.url, {
        BULK_QUEUE_NAME: `bulk-provenance-${run}`,
        BULK_POLL_INTERVAL_SECONDS: '0.5',
        WATCHLIST_SCHEDULE_GROUP: `provenance-${run}`,
        WATCHLIST_POLL_INTERVAL_MS: '100',
        BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', // the receiver listens on 127.0.0.1
      }),
    );
    account = await createAccount(t, { credits: 100_000 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send(CHECKS_BOTH_UPSTREAMS_OFFER).expect(200);
  });
  afterAll(async () => {
    await t?.close();
    await Promise.all([primary?.close(), backup?.close(), receiver?.close()]);
  });
  afterEach(() => {
    primary.setOptions({ outage: false, fault: null });
    backup.setOptions({ outage: false, fault: null });
  });

  const filter = (phone: string) => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone });
  const usage = async (): Promise<UsageEntry[]> => (await request(t.http).get('/api/v1/usage?limit=100').set(account.auth).expect(200)).body.entries;
  /** The newest CHARGE of the account, as GET /api/v1/usage shows it and as its ledger row keeps it. */
  const lastCharge = async () => {
    const entry = (await usage()).find((row) => row.type === 'CHARGE')!;
    const [row] = await t.db.query(`SELECT answered_by FROM ledger_entries WHERE id = $1`, [entry.id]);
    return { entry, stored: row.answered_by as Record<string, [string, string]> | null };
  };
  /** The compact form the ledger keeps, from what the API shows. */
  const compact = (shown: AnsweredBy) => Object.fromEntries(Object.entries(shown).map(([check, origin]) => [check, [origin.provider, origin.observed_at]]));
  const providersOf = (shown: AnsweredBy | null | undefined) => Object.fromEntries(Object.entries(shown ?? {}).map(([check, origin]) => [check, origin.provider]));
  const parsesAsTime = (origin: Origin) => expect(new Date(origin.observed_at).toISOString()).toBe(origin.observed_at);

  it('primary down: the CHARGE row and its /usage entry name the backup for each check; /filter keeps exactly its six fields', async () => {
    primary.setOptions({ outage: true });
    const res = await filter(fresh()).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['carrier', 'country', 'is_ported', 'line_type', 'status', 'valid']);

    const { entry, stored } = await lastCharge();
    expect(providersOf(entry.answered_by)).toEqual({ network_status: 'backup', line_type: 'backup' });
    Object.values(entry.answered_by!).forEach(parsesAsTime);
    expect(stored).toEqual(compact(entry.answered_by!));
  });

  it('the primary healthy: it is named; an answer served from the cache keeps its original provider and time, even with the primary down since', async () => {
    const phone = fresh();
    await filter(phone).expect(200);
    const first = await lastCharge();
    expect(providersOf(first.entry.answered_by)).toEqual({ network_status: 'primary', line_type: 'primary' });

    primary.setOptions({ outage: true });
    backup.resetStats();
    await filter(phone).expect(200); // both checks cached: charged settled at once, nobody asked
    expect(backup.stats().requests).toBe(0);
    const again = await lastCharge();
    expect(again.entry.id).not.toBe(first.entry.id);
    expect(again.entry.answered_by).toEqual(first.entry.answered_by);
    expect(again.stored).toEqual(first.stored);

    // A bulk job that finds it in the cache shows the same origin, in JSON and in CSV.
    const job = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: [phone] }).expect(202);
    const done = await waitForBulkJob(t.http, account.auth, job.body.id, 30_000);
    const [result] = done.results as Array<{ answered_by: AnsweredBy }>;
    expect(result.answered_by).toEqual(first.entry.answered_by);
    const csv = (await request(t.http).get(`/api/v1/filter/bulk/${job.body.id}/results.csv`).set(account.auth).expect(200)).text;
    const [header, row] = csv.trim().split('\r\n').map((line) => line.split(','));
    const cell = (column: string) => row[header.indexOf(column)];
    expect(cell('network_status_provider')).toBe('primary');
    expect(cell('network_status_observed_at')).toBe(first.entry.answered_by!.network_status.observed_at);
    expect(cell('line_type_observed_at')).toBe(first.entry.answered_by!.line_type.observed_at);
  });

  it('a refunded call has no provenance: both providers down, 503, its CHARGE shows answered_by null', async () => {
    primary.setOptions({ outage: true });
    backup.setOptions({ outage: true });
    await filter(fresh()).expect(503);
    const entries = await usage();
    const charge = entries.find((row) => row.type === 'CHARGE')!;
    expect(entries[0]).toMatchObject({ type: 'REFUND', answered_by: null });
    expect(charge.answered_by).toBeNull();
    const [row] = await t.db.query(`SELECT answered_by, settled_at FROM ledger_entries WHERE id = $1`, [charge.id]);
    expect(row.answered_by).toBeNull();
    expect(row.settled_at).not.toBeNull(); // refunded (the refund settles it), not left for the sweep
  });

  it('a settled charge refunded afterwards (a 503 whose settle could not be confirmed) loses its provenance with the refund', async () => {
    await filter(fresh()).expect(200);
    const { entry, stored } = await lastCharge();
    expect(stored).not.toBeNull();
    // What CreditsService.giveBackLater runs for such a call once the database answers again.
    expect(await t.app.get(CreditsRepository).refundAnswered503(entry.id, 'test: settle outcome unknown', 2000)).toBeGreaterThan(0);
    const shown = (await usage()).find((row) => row.id === entry.id)!;
    expect(shown.answered_by).toBeNull();
    const [row] = await t.db.query(`SELECT answered_by FROM ledger_entries WHERE id = $1`, [entry.id]);
    expect(row.answered_by).toBeNull();
  });

  it('a bulk job during a primary outage: each entry names the backup, in JSON and in CSV columns after the existing ones', async () => {
    primary.setOptions({ outage: true });
    const phones = distinctNumbers(4, block++);
    const job = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: [...phones, '12345'] }).expect(202);
    const done = await waitForBulkJob(t.http, account.auth, job.body.id, 30_000);
    const results = done.results as Array<{ phone: string; result?: unknown; answered_by?: AnsweredBy | null; error?: unknown }>;
    expect(results.slice(0, 4).map((entry) => providersOf(entry.answered_by))).toEqual(Array(4).fill({ network_status: 'backup', line_type: 'backup' }));
    expect(results[4]).not.toHaveProperty('answered_by'); // a syntax error: no answer, no origin
    const [stored] = await t.db.query(`SELECT answered_by FROM bulk_entries WHERE job_id = $1 AND phone = $2`, [job.body.id, phones[0]]);
    expect(stored.answered_by).toEqual(compact(results[0].answered_by!));

    const csv = (await request(t.http).get(`/api/v1/filter/bulk/${job.body.id}/results.csv`).set(account.auth).expect(200)).text;
    const lines = csv.trim().split('\r\n').map((line) => line.split(','));
    expect(lines[0]).toEqual([...COLUMNS_BEFORE, ...PROVENANCE_COLUMNS]);
    // The provenance cells are the last four (an error message may hold quoted commas before them).
    for (const [index, line] of lines.slice(1, 5).entries()) {
      const origin = results[index].answered_by!;
      expect(line.slice(-PROVENANCE_COLUMNS.length)).toEqual(['backup', origin.network_status.observed_at, 'backup', origin.line_type.observed_at]);
    }
    expect(lines[5].slice(-PROVENANCE_COLUMNS.length)).toEqual(['', '', '', '']);
    // The job's reservation is a CHARGE too: its entries carry the origins, not the ledger row.
    expect((await usage()).find((entry) => entry.type === 'CHARGE')!.answered_by).toBeNull();
  }, 60_000);

  it('a watchlist: each entry names who answered its last round, and a change found during a primary outage names the backup', async () => {
    const phones = distinctNumbers(2, block++);
    const id = (await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones, interval: 'daily', callback_url: receiver.url }).expect(201)).body.id;
    await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    const first = await waitForRound(t.http, account.auth, id, 1);
    const firstOrigins = first.entries.map((entry) => entry.answered_by as AnsweredBy);
    expect(firstOrigins.map(providersOf)).toEqual(Array(2).fill({ network_status: 'primary', line_type: 'primary' }));

    primary.setOptions({ outage: true });
    await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    const second = await waitForRound(t.http, account.auth, id, 2);
    const secondOrigins = second.entries.map((entry) => entry.answered_by as AnsweredBy);
    expect(secondOrigins.map(providersOf)).toEqual(Array(2).fill({ network_status: 'backup', line_type: 'backup' }));
    const [stored] = await t.db.query(`SELECT last_answered_by FROM watchlist_entries WHERE watchlist_id = $1 AND phone = $2`, [id, second.entries[0].phone]);
    expect(stored.last_answered_by).toEqual(compact(secondOrigins[0]));

    // The backup does not name the carrier the primary named: the round found changes, each from the backup's answer.
    const changes = (await request(t.http).get(`/api/v1/watchlists/${id}/changes`).set(account.auth).expect(200)).body.changes as Array<{
      phone: string;
      field: string;
      round: number;
      answered_by: Origin | null;
    }>;
    expect(changes.length).toBeGreaterThan(0);
    for (const change of changes) {
      const entry = second.entries.findIndex((e) => e.phone === change.phone);
      expect(change.round).toBe(2);
      expect(change.answered_by).toEqual(secondOrigins[entry].network_status); // status, valid and carrier come from network_status
    }
    const event = await eventually(
      () => receiver.calls.map((call) => JSON.parse(call.body)).find((body) => body.watchlist_id === id && body.event === 'watchlist.changes'),
      (body) => body !== undefined,
      15_000,
    );
    expect(event.changes.map((c: { answered_by: Origin }) => c.answered_by.provider)).toEqual(Array(changes.length).fill('backup'));
  }, 60_000);
});
