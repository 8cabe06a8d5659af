import { WatchlistWorker } from '../../../src/watchlists/watchlist-worker';
import { createAccount } from '../../factories/accounts';
import { ledgerState } from '../../helpers/ledger';
import { Medium } from '../medium';
import { holdLookups, runRounds, startWatchlists, watchlistsOf } from './watchlists';

const LEASE_MS = 2000;

/**
 * Review finding #5: a disabled account's watchlist still ran and charged (8 credits seen), while its
 * customer, now answered 401, could neither pause nor delete it. The worker skips the watchlists of
 * disabled accounts (it looks at the account after the claim); re-enabled, they run again (moved from
 * test/watchlists-disabled-account.e2e-spec.ts: polls are steps, the lease lapses by the clock).
 */
describe('watchlists of a disabled account', () => {
  let m: Medium;
  let api: ReturnType<typeof watchlistsOf>;
  beforeAll(async () => {
    m = await startWatchlists({ WATCHLIST_LEASE_SECONDS: String(LEASE_MS / 1000) });
    api = watchlistsOf(m);
  });
  afterAll(() => m?.close());

  const dueSince = (id: string, ms: number) => m.db.query(`UPDATE watchlists SET next_check_at = $2 WHERE id = $1`, [id, m.clock.inMs(-ms)]);

  it("a round due after the account is disabled charges nothing and does not run; another account's due round, claimed after it, runs", async () => {
    const disabled = await createAccount(m, { credits: 100 });
    const control = await createAccount(m, { credits: 100 });
    const disabledList = (await api.create(disabled, { name: 'w', phones: ['+447400151234'], interval: 'daily' })).id;
    const controlList = (await api.create(control, { name: 'w', phones: ['+447400152234'], interval: 'daily' })).id;
    await runRounds(m);
    const before = await ledgerState(m.db, disabled.id);

    await m.admin.updateAccount(disabled.id, { disabled: true }, 'test');
    // The disabled account's round is the more overdue: the worker claims it first.
    await dueSince(disabledList, 120_000);
    await dueSince(controlList, 60_000);
    expect(await runRounds(m)).toEqual([disabledList, controlList]);
    expect((await api.get(control, controlList)).last_round).toMatchObject({ round: 2, status: 'completed' });

    expect(await ledgerState(m.db, disabled.id)).toEqual(before);
    const [row] = await m.db.query(`SELECT round, round_running FROM watchlists WHERE id = $1`, [disabledList]);
    expect(row).toEqual({ round: 1, round_running: false });

    // Enabled again, its overdue round runs once the lease of the claim that left it alone lapses.
    await m.admin.updateAccount(disabled.id, { disabled: false }, 'test');
    expect(await runRounds(m)).toEqual([]);
    await m.clock.advance(LEASE_MS + 1);
    expect(await runRounds(m)).toEqual([disabledList]);
    expect((await api.get(disabled, disabledList)).last_round).toMatchObject({ round: 2, status: 'completed' });
    expect((await ledgerState(m.db, disabled.id)).balance).toBe(before.balance - 4);
  });
});

describe('a watchlist round running when its account is disabled', () => {
  let m: Medium;
  let api: ReturnType<typeof watchlistsOf>;
  beforeAll(async () => {
    // One entry a chunk: the account is disabled during the first chunks' lookups, with most chunks still to charge.
    m = await startWatchlists({ WATCHLIST_CHUNK_SIZE: '1', WATCHLIST_LEASE_SECONDS: String(LEASE_MS / 1000) });
    api = watchlistsOf(m);
  });
  afterAll(() => m?.close());

  it('stops charging at its next chunk; enabled again, the round resumes and charges each entry once', async () => {
    const account = await createAccount(m, { credits: 100 });
    const phones = ['+447400153001', '+447400153002', '+447400153003', '+447400153004', '+447400153005', '+447400153006', '+447400153007', '+447400153008'];
    const held = holdLookups(m);
    let id: string;
    try {
      id = (await api.create(account, { name: 'w', phones, interval: 'daily' })).id;
      await m.jobs.run(WatchlistWorker.JOB);
      // Two chunks in flight, each charged and in its lookup: the account is disabled now.
      await held.startedAtLeast(2);
      await m.admin.updateAccount(account.id, { disabled: true }, 'test');
      held.release();
      await m.get(WatchlistWorker).idle();
    } finally {
      held.release();
      held.restore();
    }
    // The chunks in flight when it was disabled finish; no other is charged.
    expect((await ledgerState(m.db, account.id)).byType.CHARGE).toBe(2);
    const [row] = await m.db.query(`SELECT round, round_running FROM watchlists WHERE id = $1`, [id]);
    expect(row).toEqual({ round: 1, round_running: true });
    // Disabled, polls leave it alone, however long.
    await m.clock.advance(LEASE_MS + 1);
    await runRounds(m);
    expect((await ledgerState(m.db, account.id)).byType.CHARGE).toBe(2);

    await m.admin.updateAccount(account.id, { disabled: false }, 'test');
    await m.clock.advance(LEASE_MS + 1);
    await runRounds(m);
    expect((await api.get(account, id)).last_round).toMatchObject({ round: 1, status: 'completed', checked: 8 });
    const after = await ledgerState(m.db, account.id);
    expect(after.byType.CHARGE).toBe(phones.length);
    expect(after.balance).toBe(after.ledgerSum);
  });
});
