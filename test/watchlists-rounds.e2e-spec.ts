import http from 'node:http';
import { AddressInfo } from 'node:net';
import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { refuseUpdates } from './helpers/refuse-updates';
import type { TestApp } from './helpers/test-app';
import { startSandboxWatchlists, waitForRound } from './helpers/watchlists';

/**
 * Fixes from the review of watchlists, over HTTP: one Idempotency-Key creates one watchlist whatever
 * happens to its stored answer, and a receiver that keeps a delivery waiting holds no round back. The
 * rounds' own rules (refunds on delete and pause, refusals said by callback, check toggles, leases)
 * are proven in test/medium/watchlists/rounds.medium-spec.ts.
 */
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

describe('watchlist rounds over HTTP: idempotent creation, callbacks (sandbox provider)', () => {
  let t: TestApp;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ app: t, close } = await startSandboxWatchlists('wl-rounds', {
      PROVIDER_RETRIES: '0',
      UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: String(KEY_BOUND_SECONDS),
      BULK_WEBHOOK_TIMEOUT_MS: '30000',
    }));
  });
  afterAll(() => close?.());

  const create = (account: TestAccount, body: object, key?: string) => {
    const req = request(t.http).post('/api/v1/watchlists').set(account.auth);
    return (key ? req.set('Idempotency-Key', key) : req).send(body);
  };
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
      // Past the bound after which an in-progress key that charged nothing is taken over by a retry (moved
      // there rather than waited for).
      await t.db.query(`UPDATE idempotency_keys SET claimed_at = claimed_at - make_interval(secs => $2) WHERE account_id = $1`, [account.id, KEY_BOUND_SECONDS + 1]);
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
});
