import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { verifyCallback } from '../src/webhooks/callback-signature';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import { CallbackReceiver, startReceiver } from './helpers/callback-receiver';
import { eventually } from './helpers/eventually';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { refuseUpdates } from './helpers/refuse-updates';
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
    // Each change names the answer that gave its new value: the network_status check's of round 2 (provenance, issue 23).
    const origin = (second.entries.find((e) => e.phone === flapping)?.answered_by as Record<string, unknown>).network_status;
    expect(origin).toEqual({ provider: 'hlr-lookups', observed_at: expect.any(String) });
    expect(changes.body.changes).toEqual([
      { phone: flapping, reference: 'c-1', field: 'valid', before: true, after: false, answered_by: origin, round: 2, detected_at: expect.any(String) },
      { phone: flapping, reference: 'c-1', field: 'status', before: 'CONNECTED', after: 'ABSENT', answered_by: origin, round: 2, detected_at: expect.any(String) },
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
      { phone: flapping, reference: 'c-1', field: 'status', before: 'ABSENT', after: 'CONNECTED', answered_by: { provider: 'hlr-lookups', observed_at: expect.any(String) }, detected_at: expect.any(String) },
      { phone: flapping, reference: 'c-1', field: 'valid', before: false, after: true, answered_by: { provider: 'hlr-lookups', observed_at: expect.any(String) }, detected_at: expect.any(String) },
    ]);

    // Three rounds of two numbers at 4 credits: one CHARGE per number per round, balance = ledger sum.
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 1000 - 24, ledgerSum: 1000 - 24, byType: { TOPUP: 1, CHARGE: 6 }, unsettledCharges: 0 });
    const usage = await request(t.http).get('/api/v1/usage?limit=100').set(account.auth).expect(200);
    expect(usage.body.entries.filter((row: { source: string }) => row.source === `watchlist-${id}-round-2`)).toHaveLength(2);
  }, 60_000);

  it('does not start a round the balance cannot cover: pauses, says so by callback; a top-up and PATCH {"paused": false} run it', async () => {
    const account = await createAccount(t, { credits: 8 });
    const created = await create(account, { phones: ['+447400150005', '+447400151234'], interval: 'daily', callback_url: receiver.url }).expect(201);
    const id = created.body.id;
    await waitForRound(t.http, account.auth, id, 1); // 2 × 4 credits: the balance is now 0

    await expectError(await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth), 402, 'INSUFFICIENT_CREDITS');
    // The next scheduled round falls due (the clock moved a day).
    await t.db.query(`UPDATE watchlists SET next_check_at = now() WHERE id = $1`, [id]);
    const paused = await eventually(
      async () => (await request(t.http).get(`/api/v1/watchlists/${id}`).set(account.auth)).body,
      (body) => body.status === 'paused_insufficient_credits',
      10_000,
    );
    expect(paused).toMatchObject({ status: 'paused_insufficient_credits', last_round: { round: 1 } });
    const pausedCalls = await eventually(() => callsFor(id), (found) => found.length >= 1, 10_000);
    expect(JSON.parse(pausedCalls[0].body)).toMatchObject({ event: 'watchlist.paused', watchlist_id: id, round: 2, status: 'paused_insufficient_credits' });
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 0, ledgerSum: 0, byType: { TOPUP: 1, CHARGE: 2 } });
    await expectError(await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth), 400, 'INVALID_REQUEST');

    await t.admin.changeCredits(account.id, 100, 'top-up', 'test');
    const resumed = await request(t.http).patch(`/api/v1/watchlists/${id}`).set(account.auth).send({ paused: false }).expect(200);
    expect(resumed.body.status).toBe('active');
    const second = await waitForRound(t.http, account.auth, id, 2);
    expect(second).toMatchObject({ status: 'active', last_round: { round: 2, trigger: 'schedule', checked: 2, changes: 2 } });
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 92, ledgerSum: 92, byType: { TOPUP: 2, CHARGE: 4 }, unsettledCharges: 0 });
    await eventually(() => callsFor(id), (found) => found.length >= 2, 10_000);
    expect(JSON.parse(callsFor(id)[1].body)).toMatchObject({ event: 'watchlist.changes', round: 2 });
  }, 60_000);

  it('pauses a round the balance stops covering half-way, and finishes that same round after a top-up and resume', async () => {
    // An instance that serves the API but runs no rounds, so the round can be started before the
    // balance is drained; the worker of the same group comes up afterwards.
    const group = `wl-midway-${randomBytes(4).toString('hex')}`;
    const env = { ...hlrLookupsEnv(simulator.url), WATCHLIST_SCHEDULE_GROUP: group, WATCHLIST_POLL_INTERVAL_MS: '100', BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' };
    const api = await startTestApp({ ...env, WATCHLIST_WORKER: 'false' });
    let worker: TestApp | undefined;
    try {
      const account = await createAccount(api, { credits: 16 });
      const id = (await request(api.http).post('/api/v1/watchlists').set(account.auth).send({ phones: ['+447400191111', '+447400191234'], interval: 'daily', callback_url: receiver.url }).expect(201)).body.id;
      expect((await request(api.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202)).body).toMatchObject({ round: 1, cost: 8 });
      for (let i = 0; i < 3; i++) await request(api.http).post('/api/v1/filter').set(account.auth).send({ phone: '+447400199999' }).expect(200);
      // 4 credits left: one number of the two.
      worker = await startTestApp(env);
      const paused = await eventually(
        async () => (await request(api.http).get(`/api/v1/watchlists/${id}`).set(account.auth)).body,
        (body) => body.status === 'paused_insufficient_credits',
        10_000,
      );
      expect(paused.last_round).toMatchObject({ round: 1, status: 'running', checked: 1 });
      const event = await eventually(() => callsFor(id), (found) => found.length >= 1, 10_000);
      expect(JSON.parse(event[0].body)).toMatchObject({ event: 'watchlist.paused', round: 1 });
      expect(await ledgerState(api.db, account.id)).toMatchObject({ balance: 0, ledgerSum: 0, byType: { TOPUP: 1, CHARGE: 4 } });

      await api.admin.changeCredits(account.id, 100, 'top-up', 'test');
      await request(api.http).patch(`/api/v1/watchlists/${id}`).set(account.auth).send({ paused: false }).expect(200);
      const done = await waitForRound(api.http, account.auth, id, 1);
      expect(done).toMatchObject({ status: 'active', last_round: { round: 1, status: 'completed', checked: 2, failed: 0 } });
      expect(await ledgerState(api.db, account.id)).toEqual({ balance: 96, ledgerSum: 96, byType: { TOPUP: 2, CHARGE: 5 }, unsettledCharges: 0 });
    } finally {
      await worker?.close();
      await api.close();
    }
  }, 60_000);

  it('retries a callback the receiver refuses, like bulk callbacks, until it is taken', async () => {
    const flaky = await startReceiver([500, 503], '/hooks/flaky');
    try {
      const account = await createAccount(t, { credits: 100 });
      const id = (await create(account, { phones: ['+447400200005'], interval: 'daily', callback_url: flaky.url }).expect(201)).body.id;
      await waitForRound(t.http, account.auth, id, 1);
      await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
      await waitForRound(t.http, account.auth, id, 2);
      const calls = await eventually(() => flaky.calls, (found) => found.length >= 3, 15_000);
      expect(calls).toHaveLength(3); // 500, 503, then 200: the same event each time
      expect(new Set(calls.map((call) => JSON.parse(call.body).id)).size).toBe(1);
      expect(JSON.parse(calls[2].body)).toMatchObject({ event: 'watchlist.changes', watchlist_id: id, round: 2 });
    } finally {
      await flaky.close();
    }
  }, 30_000);

  it('refunds each failed lookup exactly once and keeps the last answer', async () => {
    const account = await createAccount(t, { credits: 100 });
    const created = await create(account, { phones: ['+447400160003', '+447400161234'], interval: 'monthly' }).expect(201);
    const first = await waitForRound(t.http, account.auth, created.body.id, 1);
    expect(first.last_round).toMatchObject({ checked: 1, failed: 1 });
    expect(first.entries.find((e) => e.phone === '+447400160003')).toMatchObject({ result: null, error: 'PROVIDER_UNAVAILABLE' });
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 96, ledgerSum: 96, byType: { TOPUP: 1, CHARGE: 2, REFUND: 1 }, unsettledCharges: 0 });
  }, 30_000);

  it('answers bad input with the contract\'s 400, other accounts\' and unknown ids with 404, and a short balance with 402, charging nothing', async () => {
    const account = await createAccount(t, { credits: 4 });
    for (const body of [
      { phones: [NORMAL], interval: 'hourly' },
      { phones: [], interval: 'daily' },
      { phones: ['nope'], interval: 'daily' },
      { phones: [NORMAL, '+447400141235'], references: ['only one'], interval: 'daily' },
      { phones: [NORMAL], interval: 'daily', callback_url: 'ftp://example.com/x' },
      { phones: [NORMAL], interval: 'daily', extra: true },
    ]) {
      expectError(await create(account, body), 400, 'INVALID_REQUEST');
    }
    expectError(await create(account, { phones: [NORMAL, '+447400141235'], interval: 'daily' }), 402, 'INSUFFICIENT_CREDITS');

    const other = await createAccount(t, { credits: 100 });
    const theirs = (await create(other, { phones: [NORMAL], interval: 'daily' }).expect(201)).body.id;
    for (const path of [`/api/v1/watchlists/${theirs}`, '/api/v1/watchlists/not-a-uuid', `/api/v1/watchlists/${theirs}/changes`]) {
      expectError(await request(t.http).get(path).set(account.auth), 404, 'NOT_FOUND');
    }
    expectError(await request(t.http).post(`/api/v1/watchlists/${theirs}/check`).set(account.auth), 404, 'NOT_FOUND');
    expectError(await request(t.http).delete(`/api/v1/watchlists/${theirs}`).set(account.auth), 404, 'NOT_FOUND');
    expectError(await request(t.http).get(`/api/v1/watchlists/${theirs}/changes?since=yesterday`).set(other.auth), 400, 'INVALID_REQUEST');
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 4, byType: { TOPUP: 1 } });
  });

  it("refuses numbers past the plan's limit, across the account's watchlists", async () => {
    const plan = `wl-small-${randomBytes(3).toString('hex')}`;
    // A plan of this test only (no admin route creates plans); its limit is set as an operator would.
    await t.db.query(`INSERT INTO plans (name, "limit", window_seconds) VALUES ($1, 1000, 1)`, [plan]);
    await t.admin.updatePlan(plan, { limit: 1000, window_seconds: 1, max_watched_numbers: 3 }, 'test');
    const account = await createAccount(t, { credits: 1000, plan });
    const first = await create(account, { phones: ['+447400171001', '+447400171002'], interval: 'daily' }).expect(201);
    const refused = await create(account, { phones: ['+447400171003', '+447400171004'], interval: 'daily' });
    expectError(refused, 400, 'INVALID_REQUEST');
    expect(refused.body.error.message).toMatch(/watch 3 numbers/);
    expectError(await request(t.http).patch(`/api/v1/watchlists/${first.body.id}`).set(account.auth).send({ add: ['+447400171003', '+447400171004'] }), 400, 'INVALID_REQUEST');
    await request(t.http).patch(`/api/v1/watchlists/${first.body.id}`).set(account.auth).send({ add: ['+447400171003'], remove: ['+447400171001'] }).expect(200);
    await request(t.http).delete(`/api/v1/watchlists/${first.body.id}`).set(account.auth).expect(200);
    await create(account, { phones: ['+447400171003', '+447400171004', '+447400171005'], interval: 'daily' }).expect(201);
    expectError(await request(t.http).get(`/api/v1/watchlists/${first.body.id}`).set(account.auth), 404, 'NOT_FOUND');
  });

  it('creates one watchlist per Idempotency-Key', async () => {
    const account = await createAccount(t, { credits: 100 });
    const body = { phones: [NORMAL], interval: 'daily' };
    const first = await create(account, body, 'wl-key-1').expect(201);
    const replay = await create(account, body, 'wl-key-1').expect(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
    expectError(await create(account, { ...body, interval: 'weekly' }, 'wl-key-1'), 409, 'IDEMPOTENCY_CONFLICT');
    const list = await request(t.http).get('/api/v1/watchlists').set(account.auth).expect(200);
    expect(list.body.watchlists.map((w: { id: string }) => w.id)).toEqual([first.body.id]);
  });

  it('pages the list and the entries, and edits name, interval and callback', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const phones = ['+447400181001', '+447400181002', '+447400181003'];
    const id = (await create(account, { phones, interval: 'daily', callback_url: receiver.url }).expect(201)).body.id;
    await create(account, { phones: ['+447400181004'], interval: 'daily' }).expect(201);
    const page1 = await request(t.http).get('/api/v1/watchlists?limit=1').set(account.auth).expect(200);
    const page2 = await request(t.http).get(`/api/v1/watchlists?limit=1&cursor=${page1.body.next_cursor}`).set(account.auth).expect(200);
    expect(page2.body.watchlists[0].id).toBe(id);
    const entries1 = await request(t.http).get(`/api/v1/watchlists/${id}?limit=2`).set(account.auth).expect(200);
    const entries2 = await request(t.http).get(`/api/v1/watchlists/${id}?limit=2&cursor=${entries1.body.next_cursor}`).set(account.auth).expect(200);
    expect([...entries1.body.entries, ...entries2.body.entries].map((e: { phone: string }) => e.phone).sort()).toEqual(phones);
    expect(entries2.body.next_cursor).toBeNull();
    const edited = await request(t.http).patch(`/api/v1/watchlists/${id}`).set(account.auth).send({ name: 'renamed', interval: 'monthly', callback_url: null, paused: true }).expect(200);
    expect(edited.body).toMatchObject({ id, name: 'renamed', interval: 'monthly', callback_url: null, status: 'paused', total: 3 });
  });

  it('moves a watchlist\'s callback_url and its pending callbacks together, or neither when the second write fails', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const id = (await create(account, { phones: ['+447400182001'], interval: 'daily', callback_url: receiver.url }).expect(201)).body.id;
    // A callback not delivered yet (due later), as a round leaves it.
    await t.db.query(
      `INSERT INTO account_events (account_id, type, payload, dedupe_key, callback_url, next_attempt_at)
       VALUES ($1, 'watchlist.changes', '{}', $2, $3, now() + interval '1 day')`,
      [account.id, `watchlist:${id}:changes:99`, receiver.url],
    );
    const moved = 'https://hooks.example.com/moved';
    const pendingUrl = async () => (await t.db.query(`SELECT callback_url FROM account_events WHERE account_id = $1`, [account.id]))[0].callback_url;

    const restore = await refuseUpdates(t, 'account_events', `NEW.account_id = '${account.id}'`);
    try {
      await request(t.http).patch(`/api/v1/watchlists/${id}`).set(account.auth).send({ callback_url: moved }).expect(500);
    } finally {
      await restore();
    }
    expect((await request(t.http).get(`/api/v1/watchlists/${id}`).set(account.auth).expect(200)).body.callback_url).toBe(receiver.url);
    expect(await pendingUrl()).toBe(receiver.url);

    await request(t.http).patch(`/api/v1/watchlists/${id}`).set(account.auth).send({ callback_url: moved }).expect(200);
    expect((await request(t.http).get(`/api/v1/watchlists/${id}`).set(account.auth).expect(200)).body.callback_url).toBe(moved);
    expect(await pendingUrl()).toBe(moved);
  });
});

