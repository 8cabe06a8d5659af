import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount, TestAccount } from './factories/accounts';
import type { CallbackReceiver } from './helpers/callback-receiver';
import { eventually } from './helpers/eventually';
import { ledgerState } from './helpers/ledger';
import { refuseUpdates } from './helpers/refuse-updates';
import { startTestApp, TestApp } from './helpers/test-app';
import { startSandboxWatchlists, waitForRound } from './helpers/watchlists';
import { hlrLookupsEnv } from './provider-helpers';

/**
 * Fixes from the review of watchlists: a round is worked by the claim that holds its lease only,
 * one Idempotency-Key creates one watchlist whatever happens to its stored answer, a deletion
 * refunds what its running round charged and will never check, a check turned off is not a change,
 * and every pause says so by callback.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The shortest bound the configuration accepts for a 300 ms timeout without retries (as test/idempotent-charges). */
const KEY_BOUND_SECONDS = 6;

/** A callback receiver that holds every request open until `release()`. */
async function startHoldingReceiver(): Promise<{ url: string; held: () => number; release: () => Promise<void> }> {
  const waiting: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => waiting.push(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/held`,
    held: () => waiting.filter((res) => !res.writableEnded).length,
    release: async () => {
      for (const res of waiting) res.writeHead(200).end();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('watchlist rounds: idempotent creation, refunds on delete and pause, callbacks, changes (sandbox provider)', () => {
  let t: TestApp;
  let receiver: CallbackReceiver;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ app: t, receiver, close } = await startSandboxWatchlists('wl-rounds', {
      PROVIDER_RETRIES: '0',
      UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: String(KEY_BOUND_SECONDS),
      WATCHLIST_LEASE_SECONDS: '2',
      BULK_WEBHOOK_TIMEOUT_MS: '30000',
    }));
  });
  afterAll(() => close?.());

  const create = (account: TestAccount, body: object, key?: string) => {
    const req = request(t.http).post('/api/v1/watchlists').set(account.auth);
    return (key ? req.set('Idempotency-Key', key) : req).send(body);
  };
  const callsFor = (id: string) => receiver.calls.filter((call) => JSON.parse(call.body).watchlist_id === id).map((call) => JSON.parse(call.body));
  const watchlistIds = async (account: TestAccount) =>
    (await request(t.http).get('/api/v1/watchlists').set(account.auth).expect(200)).body.watchlists.map((w: { id: string }) => w.id);

  it('one Idempotency-Key creates one watchlist even when its answer was never stored and a retry comes after the bound', async () => {
    const account = await createAccount(t, { credits: 100 });
    const body = { phones: ['+447400301001', '+447400301002'], interval: 'daily' };
    const allowStoring = await refuseUpdates(t, 'idempotency_keys', `NEW.status = 'completed' AND NEW.key LIKE 'wl-lost-%'`);
    let first: request.Response;
    try {
      first = await create(account, body, 'wl-lost-1').expect(201);
      const [key] = await t.db.query(`SELECT status FROM idempotency_keys WHERE account_id = $1`, [account.id]);
      expect(key.status).toBe('in_progress');
      // Past the bound after which an in-progress key that charged nothing is taken over by a retry.
      await sleep(KEY_BOUND_SECONDS * 1000 + 500);
      const retry = await create(account, body, 'wl-lost-1').expect(201);
      expect(retry.text).toBe(first.text);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(await watchlistIds(account)).toEqual([first.body.id]);
    } finally {
      await allowStoring();
    }
    const again = await create(account, body, 'wl-lost-1').expect(201);
    expect(again.text).toBe(first.text);
    expect(await watchlistIds(account)).toEqual([first.body.id]);
  }, 30_000);

  /**
   * The worker stops after charging a round and before writing its answers (the database refuses the
   * answers of this watchlist), then `stop` deletes or pauses the watchlist: the charged, unchecked
   * numbers are refunded at once, and only once.
   */
  async function stoppedMidRound(suffix: string, stop: (account: TestAccount, id: string) => Promise<void>): Promise<{ account: TestAccount; id: string }> {
    const account = await createAccount(t, { credits: 100 });
    const id = (await create(account, { phones: ['1', '2', '3'].map((n) => `+4474003020${suffix}${n}`), interval: 'daily' }).expect(201)).body.id;
    await waitForRound(t.http, account.auth, id, 1);
    const allowAnswers = await refuseUpdates(t, 'watchlist_entries', `NEW.watchlist_id = '${id}' AND NEW.checked_round > OLD.checked_round AND NEW.last_error IS NULL`);
    try {
      await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
      await eventually(
        async () => (await t.db.query(`SELECT count(*)::int AS n FROM watchlist_entries WHERE watchlist_id = $1 AND charged_round = 2`, [id]))[0].n as number,
        (charged) => charged === 3,
        10_000,
      );
      expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 76, byType: { TOPUP: 1, CHARGE: 6 } });
      await stop(account, id);
    } finally {
      await allowAnswers();
    }
    return { account, id };
  }

  it('a deleted watchlist refunds, once, each number its running round charged and never checked', async () => {
    const { account } = await stoppedMidRound('1', async (owner, id) => {
      await request(t.http).delete(`/api/v1/watchlists/${id}`).set(owner.auth).expect(200);
      await request(t.http).delete(`/api/v1/watchlists/${id}`).set(owner.auth).expect(404);
    });
    // Given time to run again, no worker checks, charges or refunds anything more.
    await sleep(3000);
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 88, ledgerSum: 88, byType: { TOPUP: 1, CHARGE: 6, REFUND: 3 }, unsettledCharges: 0 });
  }, 30_000);

  it('a paused watchlist refunds what its running round charged and never checked; resumed, the round ends without charging them again', async () => {
    const { account, id } = await stoppedMidRound('2', async (owner, watchlistId) => {
      await request(t.http).patch(`/api/v1/watchlists/${watchlistId}`).set(owner.auth).send({ paused: true }).expect(200);
    });
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 88, ledgerSum: 88, byType: { TOPUP: 1, CHARGE: 6, REFUND: 3 }, unsettledCharges: 0 });
    await request(t.http).patch(`/api/v1/watchlists/${id}`).set(account.auth).send({ paused: false }).expect(200);
    expect((await waitForRound(t.http, account.auth, id, 2)).last_round).toMatchObject({ round: 2, status: 'completed' });
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 88, ledgerSum: 88, byType: { TOPUP: 1, CHARGE: 6, REFUND: 3 }, unsettledCharges: 0 });
  }, 30_000);

  it('runs rounds while a callback receiver keeps a delivery waiting', async () => {
    const holding = await startHoldingReceiver();
    try {
      const account = await createAccount(t, { credits: 100 });
      const slow = (await create(account, { phones: ['+447400310005'], interval: 'daily', callback_url: holding.url }).expect(201)).body.id;
      await waitForRound(t.http, account.auth, slow, 1);
      await request(t.http).post(`/api/v1/watchlists/${slow}/check`).set(account.auth).expect(202);
      await eventually(async () => holding.held(), (held) => held === 1, 10_000); // its change is being delivered, unanswered
      const other = (await create(account, { phones: ['+447400310001'], interval: 'daily' }).expect(201)).body.id;
      expect((await waitForRound(t.http, account.auth, other, 1, 10_000)).last_round).toMatchObject({ round: 1, checked: 1 });
      expect(holding.held()).toBe(1);
    } finally {
      await holding.release();
    }
  }, 30_000);

  it('says so by callback each time the same round is refused for credits', async () => {
    const account = await createAccount(t, { credits: 8 });
    const id = (await create(account, { phones: ['+447400304001', '+447400304002'], interval: 'daily', callback_url: receiver.url }).expect(201)).body.id;
    await waitForRound(t.http, account.auth, id, 1); // 2 × 4 credits: the balance is now 0
    await t.db.query(`UPDATE watchlists SET next_check_at = now() WHERE id = $1`, [id]);
    const paused = async () => (await request(t.http).get(`/api/v1/watchlists/${id}`).set(account.auth)).body;
    await eventually(paused, (body) => body.status === 'paused_insufficient_credits', 10_000);
    await eventually(() => callsFor(id), (calls) => calls.length >= 1, 10_000);

    // Resumed without a top-up: the round is refused again, and that is said again.
    await request(t.http).patch(`/api/v1/watchlists/${id}`).set(account.auth).send({ paused: false }).expect(200);
    await eventually(paused, (body) => body.status === 'paused_insufficient_credits', 10_000);
    const calls = await eventually(() => callsFor(id), (found) => found.length >= 2, 10_000);
    expect(calls.map((call) => [call.event, call.round])).toEqual([['watchlist.paused', 2], ['watchlist.paused', 2]]);
    expect(new Set(calls.map((call) => call.id)).size).toBe(2);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 0, ledgerSum: 0, byType: { TOPUP: 1, CHARGE: 2 } });
  }, 30_000);
});

describe('a round whose lookups outlast its lease (hlr-lookups adapter against the upstream simulator)', () => {
  let simulator: UpstreamSimulator;
  let t: TestApp;

  beforeAll(async () => {
    simulator = await startUpstreamSimulator();
    t = await startTestApp({
      ...hlrLookupsEnv(simulator.url, { PROVIDER_TIMEOUT_MS: '5000', PROVIDER_RETRIES: '0' }),
      WATCHLIST_SCHEDULE_GROUP: `wl-lease-${randomBytes(4).toString('hex')}`,
      WATCHLIST_POLL_INTERVAL_MS: '100',
      WATCHLIST_LEASE_SECONDS: '2',
      WATCHLIST_CHUNK_SIZE: '10',
      WATCHLIST_CONCURRENCY: '5',
    });
  });
  afterAll(async () => {
    await t?.close();
    await simulator?.close();
  });

  it('reports no change when a check is turned off or back on between rounds, and still reports real changes', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { network_status: true, portability: true } }).expect(200);
    const flapping = '+447400300005';
    const id = (await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones: [flapping, '+447400303001'], interval: 'daily' }).expect(201)).body.id;
    await waitForRound(t.http, account.auth, id, 1);

    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { network_status: false } }).expect(200);
    await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    const second = await waitForRound(t.http, account.auth, id, 2);
    expect(second.entries.find((e) => e.phone === flapping)?.result).toMatchObject({ status: 'UNDETERMINED' });
    expect(second.last_round).toMatchObject({ round: 2, changes: 0 });

    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { network_status: true } }).expect(200);
    await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    const third = await waitForRound(t.http, account.auth, id, 3);
    expect(third.last_round).toMatchObject({ round: 3, changes: 0 });

    // Both rounds with the network check: the 0005 number's status flips, and that is a change.
    await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    const fourth = await waitForRound(t.http, account.auth, id, 4);
    expect(fourth.last_round).toMatchObject({ round: 4, changes: 2 });
    const changes = (await request(t.http).get(`/api/v1/watchlists/${id}/changes`).set(account.auth).expect(200)).body.changes;
    expect(changes.map((c: { round: number; field: string }) => [c.round, c.field]).sort()).toEqual([[4, 'status'], [4, 'valid']]);
  }, 60_000);

  it('looks each number up once per round when every chunk takes longer than the lease', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const phones = Array.from({ length: 20 }, (_, i) => `+4474003051${String(i).padStart(2, '0')}`);
    const id = (await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ phones, interval: 'daily' }).expect(201)).body.id;
    simulator.resetStats();
    await waitForRound(t.http, account.auth, id, 1);
    const perRound = simulator.stats().requests;
    expect(perRound).toBeGreaterThanOrEqual(20);

    // 3 s per lookup, 5 at a time: a round of 20 takes 4 waves, each longer than the 2 s lease.
    simulator.setOptions({ latencyMs: 3000 });
    simulator.resetStats();
    await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    const second = await waitForRound(t.http, account.auth, id, 2, 60_000);
    expect(second.last_round).toMatchObject({ round: 2, checked: 20, failed: 0 });
    expect(simulator.stats().requests).toBe(perRound);
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 840, ledgerSum: 840, byType: { TOPUP: 1, CHARGE: 40 }, unsettledCharges: 0 });
  }, 90_000);
});
