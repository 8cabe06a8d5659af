import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import type { CallbackReceiver } from './helpers/callback-receiver';
import { eventually } from './helpers/eventually';
import { ledgerState } from './helpers/ledger';
import type { TestApp } from './helpers/test-app';
import { clearOfUtcMidnight, UTC_DAY_MARGIN_MS } from './helpers/utc-day';
import { startSandboxWatchlists, waitForRound, WatchlistBody } from './helpers/watchlists';

/**
 * A watchlist round refused by the daily spending cap (daily_credit_limit) pauses the watchlist as
 * `paused_spending_limit` and says so by callback, instead of retrying the refused charge in a loop;
 * it resumes by PATCH {"paused": false} or by itself once the cap's UTC day is over.
 */
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('watchlists under the daily spending cap (sandbox provider)', () => {
  let t: TestApp;
  let receiver: CallbackReceiver;
  let close: () => Promise<void>;
  beforeAll(async () => ({ app: t, receiver, close } = await startSandboxWatchlists('wl-cap')));
  afterAll(() => close?.());
  // A round charged before 00:00 UTC and one after it have two days' allowances: none may straddle it.
  beforeEach(() => clearOfUtcMidnight(t.db), UTC_DAY_MARGIN_MS + 10_000);

  const get = async (account: TestAccount, id: string): Promise<WatchlistBody> =>
    (await request(t.http).get(`/api/v1/watchlists/${id}`).set(account.auth).expect(200)).body;
  const setCap = (account: TestAccount, cap: number | null) =>
    request(t.http).patch('/api/v1/settings').set(account.auth).send({ daily_credit_limit: cap }).expect(200);
  const pausesFor = (id: string) =>
    receiver.calls.map((call) => JSON.parse(call.body)).filter((body) => body.watchlist_id === id && body.event === 'watchlist.paused');
  /** The transaction that last locked (or wrote) the account row: every charge attempt locks it. */
  const lastLocker = async (account: TestAccount) => (await t.db.query(`SELECT xmax::text AS xmax FROM accounts WHERE id = $1`, [account.id]))[0].xmax as string;

  /** A daily watchlist of two numbers whose first round (2 × 4 credits) is done: today's spend is 8. */
  async function watchedAfterFirstRound(account: TestAccount, phones: string[]): Promise<string> {
    const { body } = await request(t.http)
      .post('/api/v1/watchlists')
      .set(account.auth)
      .send({ phones, interval: 'daily', callback_url: receiver.url })
      .expect(201);
    await waitForRound(t.http, account.auth, body.id, 1);
    return body.id as string;
  }

  it('pauses a round the cap refuses half-way (paused_spending_limit, one callback), stops charging attempts, and finishes it when resumed', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const id = await watchedAfterFirstRound(account, ['+447400305001', '+447400305002']);
    await setCap(account, 8);

    // "Check now" is accepted (the balance covers it); the cap refuses every charge of the round.
    await request(t.http).post(`/api/v1/watchlists/${id}/check`).set(account.auth).expect(202);
    const paused = await eventually(() => get(account, id), (w) => w.status === 'paused_spending_limit', 10_000);
    expect(paused).toMatchObject({ status: 'paused_spending_limit', last_round: { round: 2, status: 'running', checked: 0 } });
    const [{ next }] = await t.db.query(`SELECT next_check_at AS next FROM watchlists WHERE id = $1`, [id]);
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    expect((next as Date).toISOString()).toBe(midnight.toISOString());

    // Paused, nothing retries the charge: no transaction locks the account row any more.
    const locker = await lastLocker(account);
    await sleep(1000); // ten worker polls
    expect(await lastLocker(account)).toBe(locker);
    expect((await get(account, id)).status).toBe('paused_spending_limit');

    const events = await eventually(() => pausesFor(id), (found) => found.length >= 1, 10_000);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ event: 'watchlist.paused', round: 2, status: 'paused_spending_limit' });
    expect(events[0].message).toContain('daily spending limit');
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 992, ledgerSum: 992, byType: { TOPUP: 1, CHARGE: 2 } });

    // The limit lifted and the watchlist resumed: the same round finishes, each number charged once.
    await setCap(account, null);
    await request(t.http).patch(`/api/v1/watchlists/${id}`).set(account.auth).send({ paused: false }).expect(200);
    const done = await waitForRound(t.http, account.auth, id, 2);
    expect(done).toMatchObject({ status: 'active', last_round: { round: 2, status: 'completed', checked: 2 } });
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 984, ledgerSum: 984, byType: { TOPUP: 1, CHARGE: 4 } });
  }, 30_000);

  it('does not start a scheduled round the cap cannot cover, and resumes it by itself once the UTC day is over', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const id = await watchedAfterFirstRound(account, ['+447400305003', '+447400305004']);
    await setCap(account, 12); // 4 left today: not enough for a round of 8
    await t.db.query(`UPDATE watchlists SET next_check_at = now() WHERE id = $1`, [id]);
    const paused = await eventually(() => get(account, id), (w) => w.status === 'paused_spending_limit', 10_000);
    expect(paused.last_round).toMatchObject({ round: 1, status: 'completed' });
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 992, byType: { TOPUP: 1, CHARGE: 2 } });
    await eventually(() => pausesFor(id), (found) => found.length >= 1, 10_000);
    expect(pausesFor(id)).toMatchObject([{ round: 2, status: 'paused_spending_limit' }]);

    // What the next 00:00 UTC brings: the counted day is over and the resume time has come.
    await t.db.query(`UPDATE accounts SET spent_day = spent_day - 1 WHERE id = $1`, [account.id]);
    await t.db.query(`UPDATE watchlists SET next_check_at = now() WHERE id = $1`, [id]);
    const resumed = await waitForRound(t.http, account.auth, id, 2);
    expect(resumed).toMatchObject({ status: 'active', last_round: { round: 2, status: 'completed', checked: 2 } });
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 984, ledgerSum: 984, byType: { TOPUP: 1, CHARGE: 4 } });
  }, 30_000);
});
