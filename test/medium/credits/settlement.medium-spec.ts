import { AdminModule } from '../../../src/admin/admin.module';
import { CreditsRepository } from '../../../src/credits/credits.repository';
import { CreditsService } from '../../../src/credits/credits.service';
import { FilterModule } from '../../../src/filter/filter.module';
import { createAccount } from '../../factories/accounts';
import { distinctNumbers } from '../../helpers/bulk';
import { ledgerState } from '../../helpers/ledger';
import { TEST_NUMBERS } from '../../helpers/numbers';
import { Medium, startMedium } from '../medium';
import { codesOf, paidCalls } from '../paid-calls';

/**
 * Answered calls' charges are settled in batches, and a call is answered only once its charge is
 * settled (moved from test/settlement.e2e-spec.ts: /filter's service instead of HTTP, the same ledger).
 */
describe('settling answered charges in batches', () => {
  let m: Medium;
  let call: ReturnType<typeof paidCalls>;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, FilterModule] });
    call = paidCalls(m);
  });
  afterAll(() => m.close());

  it('settles a burst of calls that asked the provider before answering them, in fewer statements than calls', async () => {
    const account = await createAccount(m, { credits: 4 * 60 });
    const settleMany = jest.spyOn(m.get(CreditsRepository), 'settleMany');
    try {
      const outcomes = await Promise.all(distinctNumbers(60, 63).map((phone) => call(account, phone)));
      expect(codesOf(outcomes)).toEqual(Array(60).fill('OK'));
      const settledIds = settleMany.mock.calls.flatMap(([ids]) => ids);
      expect(settleMany.mock.calls.length).toBeLessThan(60);
      expect(settledIds.length).toBeGreaterThanOrEqual(60);
    } finally {
      settleMany.mockRestore();
    }
    // No flush, no waiting: every answered call's charge was settled before its answer left.
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({
      balance: 0,
      ledgerSum: 0,
      byType: { TOPUP: 1, CHARGE: 60 },
      unsettledCharges: 0,
    });
  });

  it('an instance closed right after its answers leaves no answered charge unsettled', async () => {
    const other = await startMedium({ imports: [AdminModule, FilterModule], joining: m });
    const account = await createAccount(m, { credits: 40 });
    const outcomes = await Promise.all(Array.from({ length: 10 }, () => paidCalls(other)(account)));
    expect(codesOf(outcomes)).toEqual(Array(10).fill('OK'));
    await other.close(); // right after the answers: each was settled before it was given
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 0, unsettledCharges: 0 });
  });

  it('a call answered from the cache, or needing no upstream, is charged settled by its charge statement', async () => {
    const account = await createAccount(m, { credits: 40 });
    expect(await call(account, TEST_NUMBERS.ported)).toMatchObject({ ok: true }); // now cached
    for (const phone of [TEST_NUMBERS.ported, '+10000000000']) {
      expect(await call(account, phone, { source: 'known-answer' })).toMatchObject({ ok: true });
    }
    const charges = await m.db.query(
      `SELECT settled_at = created_at AS settled_by_charge FROM ledger_entries WHERE account_id = $1 AND source = 'known-answer'`,
      [account.id],
    );
    expect(charges).toEqual([{ settled_by_charge: true }, { settled_by_charge: true }]);
  });

  it('a call that asked the provider is settled before it is answered', async () => {
    const account = await createAccount(m, { credits: 400 });
    for (const phone of distinctNumbers(10, 61)) {
      expect(await call(account, phone)).toMatchObject({ ok: true });
      // No waiting: the moment the answer is given, its charge is final (a kill -9 now could not refund it).
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ unsettledCharges: 0 });
    }
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 360, byType: { TOPUP: 1, CHARGE: 10 } });
  });

  it('a settle the database refuses: the call answers 503 SERVICE_UNAVAILABLE and its charge is refunded', async () => {
    const account = await createAccount(m, { credits: 40 });
    const name = `pf_test_refuse_settle_${account.id.replace(/-/g, '')}`;
    await m.db.query(`
      CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'simulated outage: settle refused'; END $$`);
    // Refuses the settle statement only (not the refund, which settles the charge as it refunds it).
    await m.db.query(`
      CREATE TRIGGER ${name} BEFORE UPDATE ON ledger_entries FOR EACH ROW
      WHEN (NEW.account_id = '${account.id}' AND OLD.settled_at IS NULL AND NEW.settled_at IS NOT NULL
            AND current_query() LIKE '%UPDATE ledger_entries l SET settled_at = now(), answered_by = s.answered_by%') EXECUTE FUNCTION ${name}()`);
    try {
      expect(await call(account, distinctNumbers(1, 62)[0])).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE' });
    } finally {
      await m.db.query(`DROP TRIGGER ${name} ON ledger_entries`);
      await m.db.query(`DROP FUNCTION ${name}()`);
    }
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 40, ledgerSum: 40, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
  });

  it('never refunds a settled (answered) charge, whoever asks', async () => {
    const account = await createAccount(m, { credits: 40 });
    expect(await call(account)).toMatchObject({ ok: true });
    const [charge] = await m.db.query(`SELECT id FROM ledger_entries WHERE account_id = $1 AND type = 'CHARGE'`, [account.id]);
    expect(await m.get(CreditsService).refund(charge.id, 'late sweep')).toBe(false);
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 36, byType: { TOPUP: 1, CHARGE: 1 } });
  });
});
