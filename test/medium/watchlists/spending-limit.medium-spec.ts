import { SettingsService } from '../../../src/settings/settings.service';
import { createAccount, TestAccount } from '../../factories/accounts';
import { ledgerState } from '../../helpers/ledger';
import { clearOfUtcMidnight, UTC_DAY_MARGIN_MS } from '../../helpers/utc-day';
import { Medium } from '../medium';
import { CALLBACK_URL, callbacksOf, nextUtcMidnight, runRounds, startWatchlists, watchlistsOf } from './watchlists';

/**
 * A watchlist round refused by the daily spending cap (daily_credit_limit) pauses the watchlist as
 * `paused_spending_limit` and says so by callback, instead of retrying the refused charge in a loop;
 * it resumes by PATCH {"paused": false} or by itself at the next 00:00 UTC by the clock (moved from
 * test/watchlists-spending-limit.e2e-spec.ts: polls are steps, the clock moves to midnight).
 */
describe('watchlists under the daily spending cap (sandbox provider)', () => {
  let m: Medium;
  let api: ReturnType<typeof watchlistsOf>;
  beforeAll(async () => {
    m = await startWatchlists();
    api = watchlistsOf(m);
  });
  afterAll(() => m?.close());
  // The charges count today's spend on the database's UTC day: none of these tests may straddle its midnight.
  beforeEach(() => clearOfUtcMidnight(m.db), UTC_DAY_MARGIN_MS + 10_000);

  const setCap = (account: TestAccount, cap: number | null) => m.get(SettingsService).update(account.id, { daily_credit_limit: cap });
  const pausesFor = async (id: string) => (await callbacksOf(m, id)).filter((body) => body.event === 'watchlist.paused');
  /** The transaction that last locked (or wrote) the account row: every charge attempt locks it. */
  const lastLocker = async (account: TestAccount) => (await m.db.query(`SELECT xmax::text AS xmax FROM accounts WHERE id = $1`, [account.id]))[0].xmax as string;
  const nextCheckAt = async (id: string) => ((await m.db.query(`SELECT next_check_at FROM watchlists WHERE id = $1`, [id]))[0].next_check_at as Date).toISOString();

  /** A daily watchlist of two numbers whose first round (2 × 4 credits) is done: today's spend is 8. */
  async function watchedAfterFirstRound(account: TestAccount, phones: string[]): Promise<string> {
    const { id } = await api.create(account, { phones, interval: 'daily', callback_url: CALLBACK_URL });
    expect(await runRounds(m)).toContain(id);
    return id;
  }

  it('pauses a round the cap refuses half-way (paused_spending_limit, one callback), stops charging attempts, and finishes it when resumed', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const id = await watchedAfterFirstRound(account, ['+447400305001', '+447400305002']);
    await setCap(account, 8);

    // "Check now" is accepted (the balance covers it); the cap refuses every charge of the round.
    await api.checkNow(account, id);
    await runRounds(m);
    expect(await api.get(account, id)).toMatchObject({ status: 'paused_spending_limit', last_round: { round: 2, status: 'running', checked: 0 } });
    expect(await nextCheckAt(id)).toBe(nextUtcMidnight(m.clock.now()).toISOString());

    // Paused, nothing retries the charge: polls claim nothing, and no transaction locks the account row any more.
    const locker = await lastLocker(account);
    for (let poll = 0; poll < 10; poll++) {
      await m.clock.advance(m.config.watchlists.pollIntervalMs);
      expect(await runRounds(m)).toEqual([]);
    }
    expect(await lastLocker(account)).toBe(locker);
    expect((await api.get(account, id)).status).toBe('paused_spending_limit');

    const events = await pausesFor(id);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ event: 'watchlist.paused', round: 2, status: 'paused_spending_limit' });
    expect(events[0].message).toContain('daily spending limit');
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 992, ledgerSum: 992, byType: { TOPUP: 1, CHARGE: 2 } });

    // The limit lifted and the watchlist resumed: the same round finishes, each number charged once.
    await setCap(account, null);
    await api.update(account, id, { paused: false });
    await runRounds(m);
    expect(await api.get(account, id)).toMatchObject({ status: 'active', last_round: { round: 2, status: 'completed', checked: 2 } });
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 984, ledgerSum: 984, byType: { TOPUP: 1, CHARGE: 4 } });
  });

  it('does not start a scheduled round the cap cannot cover, and resumes it by itself at the next 00:00 UTC', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const id = await watchedAfterFirstRound(account, ['+447400305003', '+447400305004']);
    await setCap(account, 12); // 4 left today: not enough for a round of 8
    // Its next round due now (an hourly watchlist would be; this one is daily).
    await m.db.query(`UPDATE watchlists SET next_check_at = $2 WHERE id = $1`, [id, m.clock.date()]);
    expect(await runRounds(m)).toEqual([id]);
    const paused = await api.get(account, id);
    expect(paused).toMatchObject({ status: 'paused_spending_limit', last_round: { round: 1, status: 'completed' } });
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 992, byType: { TOPUP: 1, CHARGE: 2 } });
    expect(await pausesFor(id)).toMatchObject([{ round: 2, status: 'paused_spending_limit' }]);

    // Until midnight, polls leave it paused.
    const midnight = nextUtcMidnight(m.clock.now());
    await m.clock.advance(midnight.getTime() - m.clock.now() - 1000);
    expect(await runRounds(m)).toEqual([]);
    // What the next 00:00 UTC brings: the resume time has come by the clock, and the counted day is over
    // (the charges count it by the database's day, which the clock has left behind).
    await m.clock.advance(2000);
    await m.db.query(`UPDATE accounts SET spent_day = spent_day - 1 WHERE id = $1`, [account.id]);
    expect(await runRounds(m)).toEqual([id]);
    expect(await api.get(account, id)).toMatchObject({ status: 'active', last_round: { round: 2, status: 'completed', checked: 2 } });
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 984, ledgerSum: 984, byType: { TOPUP: 1, CHARGE: 4 } });
    expect(await pausesFor(id)).toHaveLength(1);
  });
});
