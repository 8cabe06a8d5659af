import { randomUUID } from 'node:crypto';
import type { QueryRunner } from 'typeorm';
import { AdminModule } from '../../../src/admin/admin.module';
import { AppError } from '../../../src/common/errors';
import { CHARGE_STATEMENT_TIMEOUT_MS, ChargeBatcher, LANDING_MARGIN_MS, LANDING_POLL_MS } from '../../../src/credits/charge-batcher';
import { CreditsRepository } from '../../../src/credits/credits.repository';
import { CreditsService } from '../../../src/credits/credits.service';
import { PendingGiveBacks } from '../../../src/credits/pending-give-backs';
import { FilterModule } from '../../../src/filter/filter.module';
import { IdempotencyRepository } from '../../../src/idempotency/idempotency.repository';
import { IdempotencyService, IdempotentWork } from '../../../src/idempotency/idempotency.service';
import { createAccount } from '../../factories/accounts';
import { advanceWhilePaused } from '../../helpers/clock-pauses';
import { eventually } from '../../helpers/eventually';
import { ledgerState } from '../../helpers/ledger';
import { TEST_NUMBERS } from '../../helpers/numbers';
import { refuseUpdates } from '../../helpers/refuse-updates';
import { Medium, startMedium } from '../medium';
import { paidCalls } from '../paid-calls';

/** A promise and its resolver: lets a test hold an attempt at a chosen point. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * Races between two PostgreSQL sessions of the ledger, interleaved by hand: a second connection
 * (session A) holds a row in an open transaction while the service's statement (session B) runs.
 * Moved from test/charge-races.e2e-spec.ts: the same races, time moved by the clock instead of
 * backdated rows and real waits.
 */
describe('races on a charge row: settle, refund, take-over, answer again', () => {
  const BOUND_SECONDS = 60;
  let m: Medium;
  let sessionA: QueryRunner;
  beforeAll(async () => (m = await startMedium({ imports: [AdminModule, FilterModule], env: { UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: String(BOUND_SECONDS) } })));
  beforeEach(async () => {
    sessionA = m.db.createQueryRunner();
    await sessionA.connect();
  });
  afterEach(() => sessionA.release());
  afterAll(() => m.close());

  /** Whether some statement of this database is waiting for a row lock (session B behind session A). */
  const waitingForLock = async () =>
    Number(
      (await m.db.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n,
    ) > 0;

  it('a refund racing the settle of the same charge: the settle committed first, the charge is not refunded', async () => {
    const account = await createAccount(m, { credits: 100 });
    const charge = await m.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'race' });
    await sessionA.query('BEGIN');
    const [settled] = await sessionA.query(`UPDATE ledger_entries SET settled_at = now() WHERE id = $1 AND settled_at IS NULL RETURNING id`, [charge.id]);
    expect(settled).toEqual([{ id: charge.id }]);
    const refund = m.get(CreditsService).refund(charge.id, 'sweep');
    expect(await eventually(waitingForLock, Boolean, 10_000, 20)).toBe(true);
    await sessionA.query('COMMIT');
    expect(await refund).toBe(false); // main: true, a REFUND of the settled (answered) charge
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({
      balance: 96,
      ledgerSum: 96,
      byType: { TOPUP: 1, CHARGE: 1 },
      unsettledCharges: 0,
    });
  });

  it("a settled-at-once charge whose connection broke, but whose statement commits on the server a moment later, is given back (the fault suite's charged 503)", async () => {
    const account = await createAccount(m, { credits: 100 });
    const repository = m.get(CreditsRepository);
    const chargeMany = repository.chargeMany.bind(repository);
    const server = gate();
    let landed: Promise<unknown> = Promise.resolve();
    // The client sees the connection reset at once; the server runs the statement when the test says so, and commits it.
    const broken = jest.spyOn(repository, 'chargeMany').mockImplementationOnce(async (...args) => {
      landed = server.opened.then(() => chargeMany(...args));
      throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    });
    try {
      const charge = m.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'landed-late', settled: true });
      await expect(charge).rejects.toThrow();
      // Not landed yet: its give-back looks again after a pause, until the landing margin has passed.
      expect(m.get(PendingGiveBacks).count).toBe(1);
      server.open();
      expect(((await landed) as { written: Map<string, unknown> }).written.size).toBe(1); // landed, not refused as late
      const giveBacks = m.get(PendingGiveBacks);
      await advanceWhilePaused(m.clock, () => giveBacks.count === 0, { stepMs: LANDING_POLL_MS });
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 100, ledgerSum: 100, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 } });
    } finally {
      broken.mockRestore();
    }
  });

  it('a look for the landed charge that began before the landing but answered after the window does not end the give-back (a slow reply)', async () => {
    const account = await createAccount(m, { credits: 100 });
    const repository = m.get(CreditsRepository);
    const [chargeMany, refundLanded] = [repository.chargeMany.bind(repository), repository.refundLanded.bind(repository)];
    const [server, heldLook, released] = [gate(), gate(), gate()];
    let landed: Promise<unknown> = Promise.resolve();
    const broken = jest.spyOn(repository, 'chargeMany').mockImplementationOnce(async (...args) => {
      landed = server.opened.then(() => chargeMany(...args));
      throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    });
    // The give-back's first look runs before the charge lands (it finds nothing); its answer comes back
    // only when the test says, after the landing and after the window has passed by the clock.
    const slowLook = jest.spyOn(repository, 'refundLanded').mockImplementationOnce(async (...args) => {
      const found = await refundLanded(...args);
      heldLook.open();
      await released.opened;
      return found;
    });
    try {
      const charge = m.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'slow-look', settled: true });
      await expect(charge).rejects.toThrow();
      await heldLook.opened;
      server.open();
      expect(((await landed) as { written: Map<string, unknown> }).written.size).toBe(1); // landed, not refused as late
      await m.clock.advance(CHARGE_STATEMENT_TIMEOUT_MS + LANDING_MARGIN_MS);
      released.open();
      const giveBacks = m.get(PendingGiveBacks);
      await advanceWhilePaused(m.clock, () => giveBacks.count === 0, { stepMs: LANDING_POLL_MS });
      // main: balance 96, no REFUND (the empty look, answered after the window, was taken as final)
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 100, ledgerSum: 100, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 } });
    } finally {
      broken.mockRestore();
      slowLook.mockRestore();
    }
  });

  it('a charge statement that outlives its wait (the account locked elsewhere) answers 503 and never lands later', async () => {
    const account = await createAccount(m, { credits: 100 });
    const batcher = m.get(ChargeBatcher);
    const chargeMany = jest.spyOn(m.get(CreditsRepository), 'chargeMany');
    // The statement's own deadline (PostgreSQL's), shortened: real time, not the Clock's.
    batcher.timeoutMs = 1000;
    try {
      await sessionA.query('BEGIN');
      await sessionA.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [account.id]);
      for (const settled of [true, false]) {
        const charge = m.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'late', settled });
        await expect(charge).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      }
      await sessionA.query('COMMIT');
      // The statements' own outcome, once the lock is free: main's waited for it, then charged.
      await Promise.allSettled(chargeMany.mock.results.map((result) => result.value));
      expect(chargeMany).toHaveBeenCalledTimes(2);
      const giveBacks = m.get(PendingGiveBacks);
      await advanceWhilePaused(m.clock, () => giveBacks.count === 0, { stepMs: LANDING_POLL_MS });
    } finally {
      chargeMany.mockRestore();
      batcher.timeoutMs = CHARGE_STATEMENT_TIMEOUT_MS;
    }
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({
      balance: 100,
      ledgerSum: 100,
      byType: { TOPUP: 1 }, // main: CHARGE 2 (one given back by a REFUND, one left unsettled for the sweep)
      unsettledCharges: 0,
    });
  });

  it('a slow attempt that fails after a retry took its key over: the retry keeps the key, its one charge is the only one', async () => {
    const account = await createAccount(m, { credits: 100 });
    const idempotency = m.get(IdempotencyService);
    const key = `slow-${randomUUID()}`;
    const body = { phone: TEST_NUMBERS.connected, source: 'race' };
    const paid = (answer: string, before?: Promise<void>): IdempotentWork => ({
      charged: async (keyId) => {
        await before;
        await m.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'race', idempotencyKeyId: keyId, settled: true });
        return answer;
      },
      rerunUncharged: async () => answer,
    });

    const slow = gate();
    const first = idempotency.run(account.id, key, body, {
      charged: async () => {
        await slow.opened;
        throw new AppError('SERVICE_UNAVAILABLE', 'upstream timed out');
      },
      rerunUncharged: async () => 'first',
    });
    const attemptAt = async (): Promise<string | undefined> =>
      (await m.db.query(`SELECT attempt FROM idempotency_keys WHERE key = $1`, [key]))[0]?.attempt;
    const firstAttempt = await eventually(attemptAt, (attempt) => attempt !== undefined, 10_000, 20);
    expect(firstAttempt).toEqual(expect.any(String));
    // The first attempt has held the key for longer than the bound: a retry may take it over.
    await m.clock.advance((BOUND_SECONDS + 1) * 1000);
    const retryHeld = gate();
    const retry = idempotency.run(account.id, key, body, paid('retry', retryHeld.opened));
    expect(await eventually(attemptAt, (attempt) => attempt !== firstAttempt, 10_000, 20)).not.toBe(firstAttempt);
    slow.open();
    await expect(first).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' }); // frees the key, on main
    retryHeld.open();
    await expect(retry).resolves.toEqual({ body: 'retry', replayed: false });

    const later = await idempotency.run(account.id, key, body, paid('charged again'));
    expect(later).toEqual({ body: 'retry', replayed: true }); // main: 'charged again', a second kept charge
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 } });
  });

  it('a charge answered again for a retry is never refunded by the late give-back of its first attempt', async () => {
    const account = await createAccount(m, { credits: 100 });
    const call = paidCalls(m);
    expect(await call(account, TEST_NUMBERS.ported)).toMatchObject({ ok: true }); // now cached
    // The first attempt: a cache hit charged settled, whose answer could not be stored (its key stays in progress).
    const allowStoring = await refuseUpdates(m, 'idempotency_keys', `NEW.key = 'lost-reply-1'`);
    const filter = () => call(account, TEST_NUMBERS.ported, { key: 'lost-reply-1' });
    let first: Awaited<ReturnType<typeof filter>>;
    let retry: Awaited<ReturnType<typeof filter>>;
    try {
      first = await filter();
      retry = await filter(); // answered again from the settled charge, not charged
    } finally {
      await allowStoring();
    }
    expect(first).toMatchObject({ ok: true, replayed: false });
    expect(retry).toMatchObject({ ok: true, replayed: true });
    if (!first.ok || !retry.ok) throw new Error('answered');
    expect(retry.body).toBe(first.body);
    const [charge] = await m.db.query(`SELECT reference FROM ledger_entries WHERE account_id = $1 AND idempotency_key_id IS NOT NULL`, [account.id]);
    // The give-back of a first attempt whose reply was lost (ChargeBatcher) lands only now.
    expect(await m.get(CreditsRepository).refundLanded(charge.reference, 'call answered 503: its charge landed late')).toBeUndefined(); // main: 4
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 92, ledgerSum: 92, byType: { TOPUP: 1, CHARGE: 2 } });
    expect(await filter()).toMatchObject({ ok: true, body: first.body });
  });

  it('a charge statement PostgreSQL fails to break a deadlock runs again: charged once, no error (a fault run answered 500 "deadlock detected")', async () => {
    const account = await createAccount(m, { credits: 100 });
    const key = await m.get(IdempotencyRepository).claim(account.id, `deadlock-${randomUUID()}`, 'request-hash');
    const deadlocks = async () => {
      await m.db.query('SELECT pg_stat_clear_snapshot()');
      return Number((await m.db.query(`SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()`))[0].deadlocks);
    };
    const deadlocksBefore = await deadlocks();
    const sessionC = m.db.createQueryRunner();
    await sessionC.connect();
    try {
      // A cycle whose victim is the charge statement whatever the load: it joins the cycle last, so its wait's
      // deadlock check (1 s, the default) is the one that finds it; session A's own check is 60 s away.
      await sessionA.query('BEGIN');
      await sessionA.query(`SET LOCAL deadlock_timeout = '60s'`);
      await sessionA.query('SELECT 1 FROM idempotency_keys WHERE id = $1 FOR UPDATE', [key!.id]);
      await sessionC.query('BEGIN');
      await sessionC.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [account.id]);
      const charge = m.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'deadlock', idempotencyKeyId: key!.id });
      const lockWaits = async () =>
        Number((await m.db.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n);
      expect(await eventually(lockWaits, (n) => n === 1, 10_000, 20)).toBe(1); // the charge statement, behind session C
      const accountForA = sessionA.query('SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE', [account.id]);
      expect(await eventually(lockWaits, (n) => n === 2, 10_000, 20)).toBe(2); // session A, queued behind the charge
      // The charge statement takes the account first, then waits (the ledger's foreign key) for the key's row
      // that session A holds, while session A waits for the account: PostgreSQL fails the charge statement (40P01).
      await sessionC.query('COMMIT');
      await accountForA;
      await sessionA.query('COMMIT');
      const written = await charge; // main: rejects with "deadlock detected", which the filter answered 500
      expect(written).toMatchObject({ id: expect.any(String) });
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 96, ledgerSum: 96, byType: { TOPUP: 1, CHARGE: 1 } });
      // A deadlock did happen (and only one): the statement was its victim and ran again.
      expect(await eventually(deadlocks, (n) => n > deadlocksBefore, 30_000, 100)).toBe(deadlocksBefore + 1);
    } finally {
      await sessionC.release();
    }
  });
});
