import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { verifyCallback } from '../src/webhooks/callback-signature';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { CallbackReceiver, startReceiver } from './helpers/callback-receiver';
import { eventually } from './helpers/eventually';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { startTestApp, TestApp } from './helpers/test-app';
import { waitForRound } from './helpers/watchlists';
import { hlrLookupsEnv } from './provider-helpers';

/** Plan-valid UK mobile numbers; the ones ending 0005 alternate CONNECTED/ABSENT at each live lookup. */
const NORMAL = '+447400141234';

describe('watchlists (hlr-lookups adapter against the upstream simulator)', () => {
  let simulator: UpstreamSimulator;
  let t: TestApp;
  let receiver: CallbackReceiver;

  beforeAll(async () => {
    simulator = await startUpstreamSimulator();
    receiver = await startReceiver([], '/hooks/watchlist');
    t = await startTestApp({
      ...hlrLookupsEnv(simulator.url, { PROVIDER_TIMEOUT_MS: '1500' }),
      WATCHLIST_SCHEDULE_GROUP: `wl-test-${randomBytes(4).toString('hex')}`,
      WATCHLIST_POLL_INTERVAL_MS: '100',
      BULK_WEBHOOK_RETRY_DELAY_SECONDS: '1',
      BULK_WEBHOOK_TIMEOUT_MS: '2000',
      BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', // the receiver listens on 127.0.0.1
    });
  });
  afterAll(async () => {
    await t?.close();
    await receiver?.close();
    await simulator?.close();
  });

  const create = (account: TestAccount, body: object, key?: string) => {
    const req = request(t.http).post('/api/v1/watchlists').set(account.auth);
    return (key ? req.set('Idempotency-Key', key) : req).send(body);
  };
  const callsFor = (id: string) => receiver.calls.filter((call) => JSON.parse(call.body).watchlist_id === id);

  it('creates, records the baseline, and on "check now" lists the change of a 0005 number and delivers it in one signed callback', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const flapping = '+447400140005';
    const created = await create(account, {
      name: 'crm',
      phones: [flapping, NORMAL, '+44 7400 141234', 'not a number'],
      references: ['c-1', 'c-2', 'c-2 again', 'c-3'],
      interval: 'weekly',
      callback_url: receiver.url,
    }).expect(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'crm',
      total: 2,
      interval: 'weekly',
      next_check_at: expect.any(String),
      cost_per_round: 8,
      rejected: [{ index: 3, phone: 'not a number', code: 'INVALID_REQUEST', message: expect.stringContaining('E.164') }],
    });
    const id = created.body.id;

    // The first round runs at once: the baseline, no change, no callback.
    const first = await waitForRound(t.http, account.auth, id, 1);
    expect(first.last_round).toMatchObject({ round: 1, checked: 2, failed: 0, changes: 0 });
    expect(first.entries.find((e) => e.phone === flapping)).toMatchObject({ reference: 'c-1', result: { status: 'CONNECTED', valid: true }, error: null });

    const check = await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    expect(check.body).toEqual({ id, round: 2, status: 'running', cost: 8 });
    const second = await waitForRound(t.http, account.auth, id, 2);
    expect(second.last_round).toMatchObject({ round: 2, trigger: 'manual', checked: 2, changes: 2 });
    expect(second.entries.find((e) => e.phone === flapping)?.result).toMatchObject({ status: 'ABSENT', valid: false });

    const changes = await request(t.http).get(`/api/v1/watchlists/${id}/changes`).set(account.auth).expect(200);
    // Newest first (the fields of one answer are written in the order status, carrier, line_type, is_ported, valid).
    expect(changes.body.changes).toEqual([
      { phone: flapping, reference: 'c-1', field: 'valid', before: true, after: false, round: 2, detected_at: expect.any(String) },
      { phone: flapping, reference: 'c-1', field: 'status', before: 'CONNECTED', after: 'ABSENT', round: 2, detected_at: expect.any(String) },
    ]);
    expect(changes.body.next_cursor).toBeNull();
    const future = await request(t.http).get(`/api/v1/watchlists/${id}/changes?since=2999-01-01T00:00:00Z`).set(account.auth).expect(200);
    expect(future.body.changes).toEqual([]);

    const calls = await eventually(() => callsFor(id), (found) => found.length >= 1, 10_000);
    expect(calls).toHaveLength(1); // none for the baseline round, one for the round with changes
    const secret: string = (await request(t.http).get('/api/v1/settings').set(account.auth)).body.webhook_secret;
    const headers = { signature: calls[0].headers['x-signature'] as string, timestamp: calls[0].headers['x-signature-timestamp'] as string };
    expect(verifyCallback(secret, headers, calls[0].body)).toBe(true);
    const event = JSON.parse(calls[0].body);
    expect(event).toEqual({ id: expect.any(String), event: 'watchlist.changes', watchlist_id: id, round: 2, changes: expect.any(Array) });
    expect(event.changes.map((c: { phone: string; field: string }) => `${c.phone} ${c.field}`).sort()).toEqual([`${flapping} status`, `${flapping} valid`]);

    // A third round: the number is back, no other number changed.
    await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    await waitForRound(t.http, account.auth, id, 3);
    await eventually(() => callsFor(id), (found) => found.length >= 2, 10_000);
    expect(JSON.parse(callsFor(id)[1].body).changes).toEqual([
      { phone: flapping, reference: 'c-1', field: 'status', before: 'ABSENT', after: 'CONNECTED', detected_at: expect.any(String) },
      { phone: flapping, reference: 'c-1', field: 'valid', before: false, after: true, detected_at: expect.any(String) },
    ]);

    // Three rounds of two numbers at 4 credits: one CHARGE per number per round, balance = ledger sum.
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 1000 - 24, ledgerSum: 1000 - 24, byType: { TOPUP: 1, CHARGE: 6 }, unsettledCharges: 0 });
    const usage = await request(t.http).get('/api/v1/usage?limit=100').set(account.auth).expect(200);
    expect(usage.body.entries.filter((row: { source: string }) => row.source === `watchlist-${id}-round-2`)).toHaveLength(2);
  }, 60_000);
});
