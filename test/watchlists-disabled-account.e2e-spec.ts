import request from 'supertest';
import { LookupService } from '../src/provider/lookup.service';
import { createAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { ledgerState } from './helpers/ledger';
import { startSandboxWatchlists, waitForRound } from './helpers/watchlists';
import type { TestApp } from './helpers/test-app';

/**
 * Review finding #5: a disabled account's watchlist still ran and charged (8 credits seen), while its
 * customer, now answered 401, could neither pause nor delete it. The scheduler skips the watchlists of
 * disabled accounts (it looks at the account after the claim: a watchlist is watchlists/'s table, an
 * account accounts/'); re-enabled, they run again.
 */
describe('watchlists of a disabled account', () => {
  let t: TestApp;
  let close: () => Promise<void>;
  beforeAll(async () => {
    // A short lease: a disabled account's watchlist, claimed and left alone, is looked at again once it lapses.
    ({ app: t, close } = await startSandboxWatchlists('wl-disabled', { WATCHLIST_LEASE_SECONDS: '2' }));
  });
  afterAll(() => close());

  const due = (id: string, secondsAgo: number) => t.db.query(`UPDATE watchlists SET next_check_at = now() - make_interval(secs => $2) WHERE id = $1`, [id, secondsAgo]);
  const watch = async (auth: Record<string, string>, phone: string) => {
    const res = await request(t.http).post('/api/v1/watchlists').set(auth).send({ name: 'w', phones: [phone], interval: 'daily' }).expect(201);
    return res.body.id as string;
  };

  it('a round due after the account is disabled charges nothing and does not run; another account\'s due round, claimed after it, runs', async () => {
    const disabled = await createAccount(t, { credits: 100 });
    const control = await createAccount(t, { credits: 100 });
    const disabledList = await watch(disabled.auth, '+447400151234');
    const controlList = await watch(control.auth, '+447400152234');
    await waitForRound(t.http, disabled.auth, disabledList, 1);
    await waitForRound(t.http, control.auth, controlList, 1);
    const before = await ledgerState(t.db, disabled.id);

    await t.admin.updateAccount(disabled.id, { disabled: true }, 'test');
    // The disabled account's round is the more overdue: the scheduler takes it first, if it takes it at all.
    await due(disabledList, 120);
    await due(controlList, 60);
    await waitForRound(t.http, control.auth, controlList, 2);

    expect(await ledgerState(t.db, disabled.id)).toEqual(before);
    const [row] = await t.db.query(`SELECT round, round_running FROM watchlists WHERE id = $1`, [disabledList]);
    expect(row).toEqual({ round: 1, round_running: false });

    // Enabled again, its overdue round runs (once the lease of the claim that left it alone lapses).
    await t.admin.updateAccount(disabled.id, { disabled: false }, 'test');
    await waitForRound(t.http, disabled.auth, disabledList, 2, 60_000);
    expect((await ledgerState(t.db, disabled.id)).balance).toBeLessThan(before.balance);
  });
});

describe('a watchlist round running when its account is disabled', () => {
  let t: TestApp;
  let close: () => Promise<void>;
  beforeAll(async () => {
    // One entry a chunk: the account is disabled during the first chunk's lookup, with most chunks still to charge.
    ({ app: t, close } = await startSandboxWatchlists('wl-disabled-mid', { WATCHLIST_CHUNK_SIZE: '1', WATCHLIST_LEASE_SECONDS: '2' }));
  });
  afterAll(() => close());

  it('stops charging at its next chunk; enabled again, the round resumes and charges each entry once', async () => {
    const account = await createAccount(t, { credits: 100 });
    const phones = ['+447400153001', '+447400153002', '+447400153003', '+447400153004', '+447400153005', '+447400153006', '+447400153007', '+447400153008'];
    const lookups = t.app.get(LookupService);
    const lookUp = lookups.lookUp.bind(lookups);
    let disabling: Promise<unknown> | undefined;
    const spy = jest.spyOn(lookups, 'lookUp').mockImplementation(async (...args: Parameters<LookupService['lookUp']>) => {
      // The real lookup, after the account is disabled (once, on the round's first lookup).
      if (phones.includes(args[0])) await (disabling ??= t.admin.updateAccount(account.id, { disabled: true }, 'test'));
      return lookUp(...args);
    });
    let id = '';
    try {
      const created = await request(t.http).post('/api/v1/watchlists').set(account.auth).send({ name: 'w', phones, interval: 'daily' }).expect(201);
      id = created.body.id;
      await eventually(() => disabling, (started) => started !== undefined, 30_000);
      await disabling;
      // Let the round run on (it would charge a chunk every few ms): the chunks already started may finish, no other.
      await new Promise((resolve) => setTimeout(resolve, 1500));
    } finally {
      spy.mockRestore();
    }
    const charges = (await ledgerState(t.db, account.id)).byType.CHARGE ?? 0;
    expect(charges).toBeGreaterThanOrEqual(1);
    expect(charges).toBeLessThanOrEqual(2); // at most the chunks in flight when it was disabled
    const [row] = await t.db.query(`SELECT round, round_running FROM watchlists WHERE id = $1`, [id]);
    expect(row).toEqual({ round: 1, round_running: true });

    await t.admin.updateAccount(account.id, { disabled: false }, 'test');
    await waitForRound(t.http, account.auth, id, 1, 60_000);
    const after = await ledgerState(t.db, account.id);
    expect(after.byType.CHARGE).toBe(phones.length);
    expect(after.balance).toBe(after.ledgerSum);
  });
});
