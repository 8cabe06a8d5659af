import { randomUUID } from 'node:crypto';
import { AdminModule } from '../../../src/admin/admin.module';
import { CreditsService } from '../../../src/credits/credits.service';
import { FilterModule } from '../../../src/filter/filter.module';
import { LookupService } from '../../../src/provider/lookup.service';
import { SettingsService } from '../../../src/settings/settings.service';
import { createAccount, TestAccount } from '../../factories/accounts';
import { distinctNumbers } from '../../helpers/bulk';
import { eventually } from '../../helpers/eventually';
import { ledgerState } from '../../helpers/ledger';
import { SIX_FIELDS, TEST_NUMBERS } from '../../helpers/numbers';
import { Medium, startMedium } from '../medium';
import { CallOutcome, codesOf, paidCalls } from '../paid-calls';
import { advanceWhilePaused } from '../../helpers/clock-pauses';

const COMBINATIONS: Array<[boolean, boolean, boolean, number]> = [
  [false, true, false, 1],
  [false, false, true, 2],
  [false, true, true, 3],
  [true, false, false, 4],
  [true, true, false, 5],
  [true, false, true, 6],
  [true, true, true, 7],
];

/** The answer of an outcome that must be one, parsed. */
function answerOf(outcome: CallOutcome): Record<string, unknown> {
  if (!outcome.ok) throw new Error(`expected an answer, got ${outcome.code}: ${outcome.message}`);
  return JSON.parse(outcome.body) as Record<string, unknown>;
}

/**
 * /filter's ledger arithmetic through its service (moved from test/filter.e2e-spec.ts, which keeps the
 * HTTP contract: validation, the test numbers' answers, 402, headers, usage pages): what each set of
 * checks costs, refunds of failed lookups exactly once, concurrency on one account, and
 * Idempotency-Key's charges.
 */
describe('/filter: the charge of a paid lookup', () => {
  let m: Medium;
  let call: ReturnType<typeof paidCalls>;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, FilterModule], env: { PROVIDER_TIMEOUT_MS: '300' } });
    call = paidCalls(m);
  });
  afterAll(() => m.close());

  const setChecks = (account: TestAccount, checks: Record<string, boolean>) => m.get(SettingsService).update(account.id, { checks });

  it.each(COMBINATIONS)(
    'with network_status=%p line_type=%p portability=%p: six fields, and the balance drops by exactly %i',
    async (networkStatus, lineType, portability, cost) => {
      const account = await createAccount(m, { credits: 100 });
      expect((await setChecks(account, { network_status: networkStatus, line_type: lineType, portability })).cost_per_call).toBe(cost);
      const answer = answerOf(await call(account));
      expect(Object.keys(answer).sort()).toEqual(SIX_FIELDS);
      expect(answer).toEqual({
        country: 'GB',
        valid: true,
        status: networkStatus ? 'CONNECTED' : 'UNDETERMINED',
        carrier: networkStatus || portability ? expect.any(String) : null,
        line_type: lineType ? 'MOBILE' : 'UNKNOWN',
        is_ported: false,
      });
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 100 - cost, ledgerSum: 100 - cost, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
    },
  );

  it('refuses a call when every check is disabled (INVALID_REQUEST), and charges nothing', async () => {
    const account = await createAccount(m, { credits: 100 });
    expect((await setChecks(account, { network_status: false, line_type: false, portability: false })).cost_per_call).toBe(0);
    expect(await call(account)).toMatchObject({ ok: false, code: 'INVALID_REQUEST', message: expect.stringMatching(/No check is enabled/) });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 100, ledgerSum: 100, byType: { TOPUP: 1 }, unsettledCharges: 0 });
  });

  it.each(['failing', 'slow'] as const)('refunds a %s upstream: PROVIDER_UNAVAILABLE, balance unchanged, one CHARGE and one REFUND', async (name) => {
    const account = await createAccount(m, { credits: 50 });
    // The slow number's upstream waits on the clock: moved on until the call ends (its 300 ms deadline).
    let ended = false;
    const answer = call(account, TEST_NUMBERS[name]).finally(() => (ended = true));
    await advanceWhilePaused(m.clock, () => ended, { stepMs: 300 });
    expect(await answer).toMatchObject({ ok: false, code: 'PROVIDER_UNAVAILABLE' });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 50, ledgerSum: 50, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
  });

  describe('concurrency', () => {
    it('with credits for exactly 25 calls, 100 parallel calls: 25 answered, 75 refused INSUFFICIENT_CREDITS, balance 0 = ledger sum', async () => {
      const account = await createAccount(m, { credits: 25 * 4 });
      const codes = codesOf(await Promise.all(Array.from({ length: 100 }, () => call(account))));
      expect(codes.filter((code) => code === 'OK')).toHaveLength(25);
      expect(codes.filter((code) => code === 'INSUFFICIENT_CREDITS')).toHaveLength(75);
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 0, ledgerSum: 0, byType: { TOPUP: 1, CHARGE: 25 }, unsettledCharges: 0 });
    });

    it('refunds exactly once: 50 parallel calls to a failing number all fail and the balance is back', async () => {
      const account = await createAccount(m, { credits: 50 * 4 });
      const codes = codesOf(await Promise.all(Array.from({ length: 50 }, () => call(account, TEST_NUMBERS.failing))));
      expect(codes).toEqual(Array(50).fill('PROVIDER_UNAVAILABLE'));
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 200, ledgerSum: 200, byType: { TOPUP: 1, CHARGE: 50, REFUND: 50 }, unsettledCharges: 0 });
    });

    it('a refund asked twice (a retry, a sweep on another instance) is written once', async () => {
      const account = await createAccount(m, { credits: 10 });
      const credits = m.get(CreditsService);
      const charge = await credits.charge(account.id, 4, { reference: `charge:test-${randomUUID()}`, phone: null, source: 'test' });
      const outcomes = await Promise.all(Array.from({ length: 10 }, () => credits.refund(charge.id, 'test')));
      expect(outcomes.filter(Boolean)).toHaveLength(1);
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 10, ledgerSum: 10, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the first answer for the same key and request, charged once', async () => {
      const account = await createAccount(m, { credits: 100 });
      const first = await call(account, TEST_NUMBERS.connected, { key: 'order-1' });
      expect(first).toMatchObject({ ok: true, replayed: false });
      expect(await call(account, TEST_NUMBERS.connected, { key: 'order-1' })).toEqual({ ...first, replayed: true });
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 } });
    });

    it('refuses the same key with another request (IDEMPOTENCY_CONFLICT), charging nothing more', async () => {
      const account = await createAccount(m, { credits: 100 });
      expect(await call(account, TEST_NUMBERS.connected, { key: 'order-2' })).toMatchObject({ ok: true });
      expect(await call(account, TEST_NUMBERS.ported, { key: 'order-2' })).toMatchObject({ ok: false, code: 'IDEMPOTENCY_CONFLICT' });
      expect((await ledgerState(m.db, account.id, { waitForSettlement: false })).balance).toBe(96);
    });

    it('refuses the key while the first call with it is still running (IDEMPOTENCY_CONFLICT), then replays its answer', async () => {
      const account = await createAccount(m, { credits: 100 });
      const phone = distinctNumbers(1, 91)[0]; // not cached: the call looks it up
      // The first call's lookup is held until the test lets it go: the second surely meets it running.
      const lookups = m.get(LookupService);
      const lookUp = lookups.lookUp.bind(lookups);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const held = jest.spyOn(lookups, 'lookUp').mockImplementationOnce(async (...args) => {
        await released;
        return lookUp(...args);
      });
      try {
        const first = call(account, phone, { key: 'order-3' });
        expect(await eventually(() => held.mock.calls.length, (n) => n === 1, 10_000, 10)).toBe(1);
        expect(await call(account, phone, { key: 'order-3' })).toMatchObject({ ok: false, code: 'IDEMPOTENCY_CONFLICT' });
        release();
        const answered = await first;
        expect(answered).toMatchObject({ ok: true, replayed: false });
        expect(await call(account, phone, { key: 'order-3' })).toEqual({ ...answered, replayed: true });
      } finally {
        held.mockRestore();
      }
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 } });
    });

    it('lets a failed (refunded) call be retried with the same key', async () => {
      const account = await createAccount(m, { credits: 100 });
      for (let i = 0; i < 2; i++) expect(await call(account, TEST_NUMBERS.failing, { key: 'order-4' })).toMatchObject({ ok: false, code: 'PROVIDER_UNAVAILABLE' });
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 100, byType: { TOPUP: 1, CHARGE: 2, REFUND: 2 } });
    });

    it('is per account: another account may use the same key', async () => {
      const a = await createAccount(m, { credits: 100 });
      const b = await createAccount(m, { credits: 100 });
      expect(await call(a, TEST_NUMBERS.connected, { key: 'shared' })).toMatchObject({ ok: true });
      expect(await call(b, TEST_NUMBERS.ported, { key: 'shared' })).toMatchObject({ ok: true, replayed: false });
    });
  });
});
