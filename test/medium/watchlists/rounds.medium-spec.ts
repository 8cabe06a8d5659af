import { SettingsService } from '../../../src/settings/settings.service';
import { RoundsRepository } from '../../../src/watchlists/rounds.repository';
import { WatchlistWorker } from '../../../src/watchlists/watchlist-worker';
import { createAccount, TestAccount } from '../../factories/accounts';
import { ledgerState } from '../../helpers/ledger';
import { Medium } from '../medium';
import { CALLBACK_URL, callbacksOf, deferred, holdLookups, runRounds, startWatchlists, watchlistsOf } from './watchlists';

const DAY_MS = 24 * 3600 * 1000;

/**
 * Watchlist rounds without HTTP (moved from test/watchlists-rounds.e2e-spec.ts): a deletion or a pause
 * refunds what the running round charged and will never check, once; each refusal of a round for
 * credits is said by callback; a check turned off or on is not a change. The worker's poll is a step
 * the test runs; a round is held in its lookups instead of waited for.
 */
describe('watchlist rounds: refunds on delete and pause, refusals, changes (sandbox provider)', () => {
  let m: Medium;
  let api: ReturnType<typeof watchlistsOf>;
  beforeAll(async () => {
    m = await startWatchlists({ PROVIDER_RETRIES: '0' });
    api = watchlistsOf(m);
  });
  afterAll(() => m?.close());

  it('the poll is a job of the scheduler, every WATCHLIST_POLL_INTERVAL_MS; creating a watchlist wakes it', async () => {
    expect(m.jobs.everyMs(WatchlistWorker.JOB)).toBe(m.config.watchlists.pollIntervalMs);
    const wakes = m.jobs.wakes(WatchlistWorker.JOB);
    const account = await createAccount(m, { credits: 100 });
    const { id } = await api.create(account, { phones: ['+447400300101'], interval: 'daily' });
    expect(m.jobs.wakes(WatchlistWorker.JOB)).toBe(wakes + 1);
    expect(await runRounds(m)).toEqual([id]);
    expect((await api.get(account, id)).last_round).toMatchObject({ round: 1, status: 'completed', checked: 1 });
    // Due again an interval after the round started, by the clock.
    expect(await runRounds(m)).toEqual([]);
    await m.clock.advance(DAY_MS);
    expect(await runRounds(m)).toEqual([id]);
    expect((await api.get(account, id)).last_round).toMatchObject({ round: 2, status: 'completed', trigger: 'schedule' });
  });

  /**
   * The worker stops after charging a round and before writing its answers (its lookups are held), then
   * `stop` deletes or pauses the watchlist: the charged, unchecked numbers are refunded at once, and
   * only once, whatever the held round does when it goes on.
   */
  async function stoppedMidRound(suffix: string, stop: (account: TestAccount, id: string) => Promise<void>): Promise<{ account: TestAccount; id: string }> {
    const account = await createAccount(m, { credits: 100 });
    const { id } = await api.create(account, { phones: ['1', '2', '3'].map((n) => `+4474003020${suffix}${n}`), interval: 'daily' });
    await runRounds(m);
    const held = holdLookups(m);
    try {
      await api.checkNow(account, id);
      const poll = m.jobs.run<string[]>(WatchlistWorker.JOB);
      expect(await poll).toEqual([id]);
      await held.startedAtLeast(3);
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 76, byType: { TOPUP: 1, CHARGE: 6 } });
      await stop(account, id);
    } finally {
      held.release();
      held.restore();
    }
    await m.get(WatchlistWorker).idle();
    return { account, id };
  }

  it('a deleted watchlist refunds, once, each number its running round charged and never checked', async () => {
    const { account, id } = await stoppedMidRound('1', async (owner, watchlistId) => {
      await api.remove(owner, watchlistId);
      await expect(api.remove(owner, watchlistId)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    });
    // Polled again (and a day later, when it would be due), no worker checks, charges or refunds anything more.
    expect(await runRounds(m)).toEqual([]);
    await m.clock.advance(DAY_MS);
    expect(await runRounds(m)).not.toContain(id);
    expect(await ledgerState(m.db, account.id)).toEqual({ balance: 88, ledgerSum: 88, byType: { TOPUP: 1, CHARGE: 6, REFUND: 3 }, unsettledCharges: 0 });
  });

  it('a paused watchlist refunds what its running round charged and never checked; resumed, the round ends without charging them again', async () => {
    const { account, id } = await stoppedMidRound('2', async (owner, watchlistId) => {
      await api.update(owner, watchlistId, { paused: true });
    });
    expect(await ledgerState(m.db, account.id)).toEqual({ balance: 88, ledgerSum: 88, byType: { TOPUP: 1, CHARGE: 6, REFUND: 3 }, unsettledCharges: 0 });
    await api.update(account, id, { paused: false });
    await runRounds(m);
    expect((await api.get(account, id)).last_round).toMatchObject({ round: 2, status: 'completed' });
    expect(await ledgerState(m.db, account.id)).toEqual({ balance: 88, ledgerSum: 88, byType: { TOPUP: 1, CHARGE: 6, REFUND: 3 }, unsettledCharges: 0 });
  });

  it('says so by callback each time the same round is refused for credits', async () => {
    const account = await createAccount(m, { credits: 8 });
    const { id } = await api.create(account, { phones: ['+447400304001', '+447400304002'], interval: 'daily', callback_url: CALLBACK_URL });
    await runRounds(m); // 2 × 4 credits: the balance is now 0
    await m.clock.advance(DAY_MS);
    await runRounds(m);
    expect((await api.get(account, id)).status).toBe('paused_insufficient_credits');
    expect(await callbacksOf(m, id)).toHaveLength(1);

    // Resumed without a top-up: the round is refused again, and that is said again.
    await api.update(account, id, { paused: false });
    await runRounds(m);
    expect((await api.get(account, id)).status).toBe('paused_insufficient_credits');
    const calls = await callbacksOf(m, id);
    expect(calls.map((call) => [call.event, call.round])).toEqual([['watchlist.paused', 2], ['watchlist.paused', 2]]);
    expect(new Set(calls.map((call) => call.id)).size).toBe(2);
    // Paused, polls never retry it.
    await m.clock.advance(DAY_MS);
    expect(await runRounds(m)).not.toContain(id);
    expect(await callbacksOf(m, id)).toHaveLength(2);
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 0, ledgerSum: 0, byType: { TOPUP: 1, CHARGE: 2 } });
  });

  it('reports no change when a check is turned off or back on between rounds, and still reports real changes', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const settings = m.get(SettingsService);
    await settings.update(account.id, { checks: { network_status: true, portability: true } });
    const flapping = '+447400300005';
    const { id } = await api.create(account, { phones: [flapping, '+447400303001'], interval: 'daily' });
    await runRounds(m);

    const round = async (expected: number) => {
      await api.checkNow(account, id);
      await runRounds(m);
      const watchlist = await api.get(account, id);
      expect(watchlist.last_round).toMatchObject({ round: expected, status: 'completed' });
      return watchlist;
    };
    await settings.update(account.id, { checks: { network_status: false } });
    const second = await round(2);
    expect(second.entries.find((e) => e.phone === flapping)?.result).toMatchObject({ status: 'UNDETERMINED' });
    expect(second.last_round).toMatchObject({ changes: 0 });

    await settings.update(account.id, { checks: { network_status: true } });
    expect((await round(3)).last_round).toMatchObject({ changes: 0 });

    // Both rounds with the network check: the 0005 number's status flips, and that is a change.
    expect((await round(4)).last_round).toMatchObject({ changes: 2 });
    const changes = await m.db.query(`SELECT round, field FROM watchlist_changes WHERE watchlist_id = $1 ORDER BY field`, [id]);
    expect(changes).toEqual([{ round: 4, field: 'status' }, { round: 4, field: 'valid' }]);
  });
});

/**
 * Leases of rounds (moved from the lease case of test/watchlists-rounds.e2e-spec.ts, and the two-instance
 * case of test/watchlists-instances.e2e-spec.ts): two instances share one database, one clock and one
 * schedule group; a round's lease is renewed on the clock while its lookups take longer than the lease,
 * and taken over by the other instance only once its instance stopped renewing it.
 */
describe('watchlist round leases across two instances', () => {
  const LEASE_MS = 2000;
  let a: Medium;
  let b: Medium;
  beforeAll(async () => {
    const env = { WATCHLIST_LEASE_SECONDS: String(LEASE_MS / 1000), WATCHLIST_CHUNK_SIZE: '10', WATCHLIST_CONCURRENCY: '5' };
    a = await startWatchlists(env);
    b = await startWatchlists(env, a);
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const phonesFrom = (block: number, count: number) => Array.from({ length: count }, (_, i) => `+44740030${block}${String(i).padStart(2, '0')}`);
  const chargesPerNumber = async (watchlistId: string) =>
    (await a.db.query(
      `SELECT count(DISTINCT reference)::int AS numbers, count(*)::int AS charges FROM ledger_entries WHERE type = 'CHARGE' AND reference LIKE 'watchlist:' || $1 || ':%'`,
      [watchlistId],
    ))[0] as { numbers: number; charges: number };

  it('looks each number up once when every chunk takes longer than the lease: its instance renews it, the other never claims it', async () => {
    const account = await createAccount(a, { credits: 1000 });
    const renewals: Array<Promise<boolean>> = [];
    const repository = a.get(RoundsRepository);
    const renewLease = repository.renewLease.bind(repository);
    const renewing = jest.spyOn(repository, 'renewLease').mockImplementation((...args) => {
      const renewal = renewLease(...args);
      renewals.push(renewal);
      return renewal;
    });
    const heldOnA = holdLookups(a);
    const onB = holdLookups(b, false);
    try {
      const { id } = await watchlistsOf(a).create(account, { phones: phonesFrom(51, 20), interval: 'daily' });
      expect(await a.jobs.run(WatchlistWorker.JOB)).toEqual([id]);
      await heldOnA.startedAtLeast(5);
      // Three lease periods in its lookups: renewed every third of the lease, and the other instance's polls find nothing to claim.
      for (let third = 0; third < 9; third++) {
        await a.clock.advance(LEASE_MS / 3);
        await Promise.all(renewals);
        expect(await b.jobs.run(WatchlistWorker.JOB)).toEqual([]);
      }
      expect(renewals.length).toBe(9);
      expect(await Promise.all(renewals)).toEqual(Array(9).fill(true));
      heldOnA.release();
      await a.get(WatchlistWorker).idle();
      expect((await watchlistsOf(a).get(account, id)).last_round).toMatchObject({ round: 1, status: 'completed', checked: 20, failed: 0 });
      expect([...heldOnA.started].sort()).toEqual(phonesFrom(51, 20));
      expect(onB.started).toEqual([]);
      expect(await chargesPerNumber(id)).toEqual({ numbers: 20, charges: 20 });
    } finally {
      heldOnA.release();
      heldOnA.restore();
      onB.restore();
      renewing.mockRestore();
    }
    expect(await ledgerState(a.db, account.id)).toEqual({ balance: 920, ledgerSum: 920, byType: { TOPUP: 1, CHARGE: 20 }, unsettledCharges: 0 });
  });

  it('a round whose instance stopped renewing its lease is resumed by the other after the lease: each number charged once', async () => {
    const account = await createAccount(a, { credits: 1000 });
    const repository = a.get(RoundsRepository);
    // Instance a pauses (a long GC, a lost network): its renewals do not reach the database, its lookups hang.
    const paused = deferred<boolean>();
    const renewing = jest.spyOn(repository, 'renewLease').mockImplementation(() => paused.promise);
    const heldOnA = holdLookups(a);
    const onB = holdLookups(b, false);
    try {
      // One chunk (WATCHLIST_CHUNK_SIZE): charged in one transaction before its first lookup starts.
      const { id } = await watchlistsOf(a).create(account, { phones: phonesFrom(52, 10), interval: 'daily' });
      expect(await a.jobs.run(WatchlistWorker.JOB)).toEqual([id]);
      await heldOnA.startedAtLeast(5);
      await a.clock.advance(LEASE_MS - 100);
      expect(await b.jobs.run(WatchlistWorker.JOB)).toEqual([]);
      await a.clock.advance(200);
      expect(await b.jobs.run(WatchlistWorker.JOB)).toEqual([id]);
      await b.get(WatchlistWorker).idle();
      expect((await watchlistsOf(b).get(account, id)).last_round).toMatchObject({ round: 1, status: 'completed', checked: 10, failed: 0 });
      expect(onB.started).toHaveLength(10);
      // a wakes up: its renewal is refused and so are its answers (the lease is b's); nothing is charged again.
      heldOnA.release();
      paused.resolve(false);
      await a.get(WatchlistWorker).idle();
      expect(await chargesPerNumber(id)).toEqual({ numbers: 10, charges: 10 });
    } finally {
      paused.resolve(false);
      heldOnA.release();
      heldOnA.restore();
      onB.restore();
      renewing.mockRestore();
    }
    expect(await ledgerState(a.db, account.id)).toEqual({ balance: 960, ledgerSum: 960, byType: { TOPUP: 1, CHARGE: 10 }, unsettledCharges: 0 });
  });

  it('runs a round once when both instances are asked for it at once and both poll', async () => {
    const account = await createAccount(a, { credits: 10_000 });
    const phones = phonesFrom(53, 60);
    const { id } = await watchlistsOf(a).create(account, { phones, interval: 'daily' });
    await runRounds(a);
    const [onA, onB] = [holdLookups(a, false), holdLookups(b, false)];
    try {
      const [x, y] = await Promise.all([watchlistsOf(a).checkNow(account, id), watchlistsOf(b).checkNow(account, id)]);
      expect([x.round, y.round]).toEqual([2, 2]);
      await Promise.all([runRounds(a), runRounds(b)]);
      expect((await watchlistsOf(b).get(account, id)).last_round).toMatchObject({ round: 2, status: 'completed', checked: 60 });
      expect(onA.started.length + onB.started.length).toBe(60);
      expect(new Set([...onA.started, ...onB.started]).size).toBe(60);
    } finally {
      onA.restore();
      onB.restore();
    }
    const [{ rounds }] = await a.db.query(`SELECT count(*)::int AS rounds FROM watchlist_rounds WHERE watchlist_id = $1`, [id]);
    expect(rounds).toBe(2);
    expect(await chargesPerNumber(id)).toEqual({ numbers: 120, charges: 120 });
    expect(await ledgerState(a.db, account.id)).toEqual({ balance: 10_000 - 480, ledgerSum: 10_000 - 480, byType: { TOPUP: 1, CHARGE: 120 }, unsettledCharges: 0 });
  });
});
