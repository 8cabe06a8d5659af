import request from 'supertest';
import { CreditsRepository } from '../src/credits/credits.repository';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

describe('settling answered charges in batches', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp()));
  afterAll(() => t.close());

  it('settles a burst of calls that asked the provider before answering them, in fewer statements than calls', async () => {
    const account = await createAccount(t, { credits: 4 * 60 });
    const settleMany = jest.spyOn(t.app.get(CreditsRepository), 'settleMany');
    try {
      const responses = await Promise.all(
        distinctNumbers(60, 63).map((phone) => request(t.http).post('/api/v1/filter').set(account.auth).send({ phone })),
      );
      expect(responses.map((res) => res.status)).toEqual(Array(60).fill(200));
      const settledIds = settleMany.mock.calls.flatMap(([ids]) => ids);
      expect(settleMany.mock.calls.length).toBeLessThan(60);
      expect(settledIds.length).toBeGreaterThanOrEqual(60);
    } finally {
      settleMany.mockRestore();
    }
    // No flush, no waiting: every answered call's charge was settled before its answer left.
    expect(await ledgerState(t.db, account.id, { waitForSettlement: false })).toEqual({
      balance: 0,
      ledgerSum: 0,
      byType: { TOPUP: 1, CHARGE: 60 },
      unsettledCharges: 0,
    });
  });

  it('an app closed right after its answers leaves no answered charge unsettled', async () => {
    const app = await startTestApp();
    const account = await createAccount(app, { credits: 40 });
    await Promise.all(Array.from({ length: 10 }, () => request(app.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }).expect(200)));
    await app.close(); // right after the answers: each was settled before it left
    expect(await ledgerState(t.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 0, unsettledCharges: 0 });
  });

  it('a call answered from the cache, or needing no upstream, is charged settled by its charge statement', async () => {
    const account = await createAccount(t, { credits: 40 });
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.ported }).expect(200); // now cached
    for (const phone of [TEST_NUMBERS.ported, '+10000000000']) {
      await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone, source: 'known-answer' }).expect(200);
    }
    const charges = await t.db.query(
      `SELECT settled_at = created_at AS settled_by_charge FROM ledger_entries WHERE account_id = $1 AND source = 'known-answer'`,
      [account.id],
    );
    expect(charges).toEqual([{ settled_by_charge: true }, { settled_by_charge: true }]);
  });

  it('a call that asked the provider is settled before its 200 leaves', async () => {
    const account = await createAccount(t, { credits: 400 });
    for (const phone of distinctNumbers(10, 61)) {
      await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone }).expect(200);
      // No waiting: the moment the answer is received, its charge is final (a kill -9 now could not refund it).
      expect(await ledgerState(t.db, account.id, { waitForSettlement: false })).toMatchObject({ unsettledCharges: 0 });
    }
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 360, byType: { TOPUP: 1, CHARGE: 10 } });
  });

  it('a settle the database refuses: the call answers 503 SERVICE_UNAVAILABLE and its charge is refunded', async () => {
    const account = await createAccount(t, { credits: 40 });
    const name = `pf_test_refuse_settle_${account.id.replace(/-/g, '')}`;
    await t.db.query(`
      CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'simulated outage: settle refused'; END $$`);
    // Refuses the settle statement only (not the refund, which settles the charge as it refunds it).
    await t.db.query(`
      CREATE TRIGGER ${name} BEFORE UPDATE ON ledger_entries FOR EACH ROW
      WHEN (NEW.account_id = '${account.id}' AND OLD.settled_at IS NULL AND NEW.settled_at IS NOT NULL
            AND current_query() LIKE '%UPDATE ledger_entries l SET settled_at = now(), answered_by = s.answered_by%') EXECUTE FUNCTION ${name}()`);
    try {
      const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: distinctNumbers(1, 62)[0] });
      expectError(res, 503, 'SERVICE_UNAVAILABLE');
    } finally {
      await t.db.query(`DROP TRIGGER ${name} ON ledger_entries`);
      await t.db.query(`DROP FUNCTION ${name}()`);
    }
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 40, ledgerSum: 40, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
  });

  it('never refunds a settled (answered) charge, whoever asks', async () => {
    const account = await createAccount(t, { credits: 40 });
    await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.connected }).expect(200);
    await t.app.get(CreditsService).flushSettlements();
    const [charge] = await t.db.query(`SELECT id FROM ledger_entries WHERE account_id = $1 AND type = 'CHARGE'`, [account.id]);
    expect(await t.app.get(CreditsService).refund(charge.id, 'late sweep')).toBe(false);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 36, byType: { TOPUP: 1, CHARGE: 1 } });
  });
});
