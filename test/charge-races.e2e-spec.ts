import { randomUUID } from 'node:crypto';
import request from 'supertest';
import type { QueryRunner } from 'typeorm';
import { AppError } from '../src/common/errors';
import { CHARGE_STATEMENT_TIMEOUT_MS, ChargeBatcher } from '../src/credits/charge-batcher';
import { CreditsRepository } from '../src/credits/credits.repository';
import { CreditsService } from '../src/credits/credits.service';
import { IdempotencyService, IdempotentWork } from '../src/idempotency/idempotency.service';
import { createAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { refuseUpdates } from './helpers/refuse-updates';
import { startTestApp, TestApp } from './helpers/test-app';

/** A promise and its resolver: lets a test hold an attempt at a chosen point. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * Races between two PostgreSQL sessions of the ledger, interleaved by hand: a second connection
 * (session A) holds a row in an open transaction while the service's statement (session B) runs.
 */
describe('races on a charge row: settle, refund, take-over, answer again', () => {
  let t: TestApp;
  let sessionA: QueryRunner;
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox' })));
  beforeEach(async () => {
    sessionA = t.db.createQueryRunner();
    await sessionA.connect();
  });
  afterEach(() => sessionA.release());
  afterAll(() => t.close());

  /** Whether some statement of this database is waiting for a row lock (session B behind session A). */
  const waitingForLock = async () =>
    Number(
      (await t.db.query(`SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`))[0].n,
    ) > 0;

  it('a refund racing the settle of the same charge: the settle committed first, the charge is not refunded', async () => {
    const account = await createAccount(t, { credits: 100 });
    const charge = await t.app.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'race' });
    await sessionA.query('BEGIN');
    const [settled] = await sessionA.query(`UPDATE ledger_entries SET settled_at = now() WHERE id = $1 AND settled_at IS NULL RETURNING id`, [charge.id]);
    expect(settled).toEqual([{ id: charge.id }]);
    const refund = t.app.get(CreditsService).refund(charge.id, 'sweep');
    expect(await eventually(waitingForLock, Boolean, 5000, 20)).toBe(true);
    await sessionA.query('COMMIT');
    expect(await refund).toBe(false); // main: true, a REFUND of the settled (answered) charge
    expect(await ledgerState(t.db, account.id, { waitForSettlement: false })).toEqual({
      balance: 96,
      ledgerSum: 96,
      byType: { TOPUP: 1, CHARGE: 1 },
      unsettledCharges: 0,
    });
  });

  it("a settled-at-once charge whose connection broke, but whose statement commits on the server a moment later, is given back (the fault suite's charged 503)", async () => {
    const account = await createAccount(t, { credits: 100 });
    const batcher = t.app.get(ChargeBatcher);
    const repository = t.app.get(CreditsRepository);
    const chargeMany = repository.chargeMany.bind(repository);
    let landed: Promise<unknown> = Promise.resolve();
    // The client sees the connection reset at once; the server runs the statement 300 ms later and commits it.
    const broken = jest.spyOn(repository, 'chargeMany').mockImplementationOnce(async (...args) => {
      landed = new Promise((resolve) => setTimeout(resolve, 300)).then(() => chargeMany(...args));
      throw Object.assign(new Error('Connection terminated unexpectedly'), { code: 'ECONNRESET' });
    });
    batcher.timeoutMs = 2000;
    try {
      const charge = t.app.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'landed-late', settled: true });
      await expect(charge).rejects.toThrow();
      await landed;
      const state = await eventually(() => ledgerState(t.db, account.id, { waitForSettlement: false }), (s) => s.balance === 100, 5000, 100);
      expect(state).toMatchObject({ balance: 100, ledgerSum: 100, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 } });
    } finally {
      broken.mockRestore();
      batcher.timeoutMs = CHARGE_STATEMENT_TIMEOUT_MS;
    }
  });

  it('a charge statement that outlives its wait (the account locked elsewhere) answers 503 and never lands later', async () => {
    const account = await createAccount(t, { credits: 100 });
    const batcher = t.app.get(ChargeBatcher);
    const chargeMany = jest.spyOn(t.app.get(CreditsRepository), 'chargeMany');
    batcher.timeoutMs = 1000;
    try {
      await sessionA.query('BEGIN');
      await sessionA.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [account.id]);
      for (const settled of [true, false]) {
        const charge = t.app.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'late', settled });
        await expect(charge).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      }
      await sessionA.query('COMMIT');
      // The statements' own outcome, once the lock is free: main's waited for it, then charged.
      await Promise.allSettled(chargeMany.mock.results.map((result) => result.value));
      expect(chargeMany).toHaveBeenCalledTimes(2);
    } finally {
      chargeMany.mockRestore();
      batcher.timeoutMs = CHARGE_STATEMENT_TIMEOUT_MS;
    }
    expect(await ledgerState(t.db, account.id, { waitForSettlement: false })).toEqual({
      balance: 100,
      ledgerSum: 100,
      byType: { TOPUP: 1 }, // main: CHARGE 2 (one given back by a REFUND, one left unsettled for the sweep)
      unsettledCharges: 0,
    });
  });

  it('a slow attempt that fails after a retry took its key over: the retry keeps the key, its one charge is the only one', async () => {
    const account = await createAccount(t, { credits: 100 });
    const idempotency = t.app.get(IdempotencyService);
    const key = `slow-${randomUUID()}`;
    const body = { phone: TEST_NUMBERS.connected, source: 'race' };
    const paid = (answer: string, before?: Promise<void>): IdempotentWork => ({
      charged: async (keyId) => {
        await before;
        await t.app.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'race', idempotencyKeyId: keyId, settled: true });
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
    const keyRows = () => t.db.query(`SELECT claimed_at > now() - interval '1 minute' AS recent FROM idempotency_keys WHERE key = $1`, [key]);
    expect(await eventually(keyRows, (rows) => rows.length === 1, 5000, 20)).toEqual([{ recent: true }]);
    // The first attempt has held the key for longer than the bound: a retry may take it over.
    await t.db.query(`UPDATE idempotency_keys SET claimed_at = now() - interval '1 hour' WHERE key = $1`, [key]);
    const retryHeld = gate();
    const retry = idempotency.run(account.id, key, body, paid('retry', retryHeld.opened));
    expect(await eventually(keyRows, (rows) => rows[0]?.recent === true, 5000, 20)).toEqual([{ recent: true }]);
    slow.open();
    await expect(first).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' }); // frees the key, on main
    retryHeld.open();
    await expect(retry).resolves.toEqual({ body: 'retry', replayed: false });

    const later = await idempotency.run(account.id, key, body, paid('charged again'));
    expect(later).toEqual({ body: 'retry', replayed: true }); // main: 'charged again', a second kept charge
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 } });
  });

  it('a charge answered again for a retry is never refunded by the late give-back of its first attempt', async () => {
    const account = await createAccount(t, { credits: 100 });
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.ported }).expect(200); // now cached
    // The first attempt: a cache hit charged settled, whose answer could not be stored (its key stays in progress).
    const allowStoring = await refuseUpdates(t, 'idempotency_keys', `NEW.key = 'lost-reply-1'`);
    const filter = () => request(t.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', 'lost-reply-1').send({ phone: TEST_NUMBERS.ported });
    let first: request.Response;
    let retry: request.Response;
    try {
      first = await filter().expect(200);
      retry = await filter().expect(200); // answered again from the settled charge, not charged
    } finally {
      await allowStoring();
    }
    expect(retry.text).toBe(first.text);
    const [charge] = await t.db.query(`SELECT reference FROM ledger_entries WHERE account_id = $1 AND idempotency_key_id IS NOT NULL`, [account.id]);
    // The give-back of a first attempt whose reply was lost (ChargeBatcher) lands only now.
    expect(await t.app.get(CreditsRepository).refundLanded(charge.reference, 'call answered 503: its charge landed late')).toBeUndefined(); // main: 4
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 92, ledgerSum: 92, byType: { TOPUP: 1, CHARGE: 2 } });
    expect((await filter().expect(200)).text).toBe(first.text);
  });
});
