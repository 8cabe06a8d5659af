import { AdminModule } from '../../../src/admin/admin.module';
import { CreditsRepository } from '../../../src/credits/credits.repository';
import { GIVE_BACK_PAUSE_MS, OUTCOME_UNKNOWN } from '../../../src/credits/credits.service';
import { PendingGiveBacks } from '../../../src/credits/pending-give-backs';
import { Metrics } from '../../../src/metrics/metrics';
import { createAccount } from '../../factories/accounts';
import { distinctNumbers } from '../../helpers/bulk';
import { advanceWhilePaused } from '../../helpers/clock-pauses';
import { eventually } from '../../helpers/eventually';
import { ledgerState } from '../../helpers/ledger';
import { TEST_NUMBERS } from '../../helpers/numbers';
import { TcpProxy } from '../../helpers/tcp-proxy';
import { behindProxy } from '../behind-proxy';
import { Medium, startMedium } from '../medium';
import { CallOutcome, paidCalls } from '../paid-calls';

/** A promise's outcome once it has one, readable without awaiting it. */
function watched<T>(promise: Promise<T>): { done: () => boolean; result: Promise<T> } {
  let done = false;
  const result = promise.finally(() => (done = true));
  return { done: () => done, result };
}

/**
 * The chaos run's "503 that stays charged": PostgreSQL connections reset while a call's settle runs.
 * The services talk to PostgreSQL through a TCP proxy; the test reaches the settle statement through a
 * hook on CreditsRepository.settleMany and breaks the connections exactly there, while it watches the
 * database directly. The connections are refused until the test accepts them again, and the pauses
 * between the attempts at resolving the outcome pass on the clock (moved from
 * test/settlement-lost-replies.e2e-spec.ts, where both were real time and raced each other).
 */
describe('a settle whose reply is lost: the outcome is resolved, never guessed', () => {
  let m: Medium;
  let p: Medium;
  let proxy: TcpProxy;
  let seed = 0;

  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule] });
    ({ instance: p, proxy } = await behindProxy(m));
  });
  afterAll(async () => {
    await p.close();
    await proxy.cut();
    await m.close();
  });
  afterEach(() => {
    jest.restoreAllMocks();
    proxy.acceptNew();
  });

  const settledInDatabase = async (chargeId: string) =>
    (await m.db.query(`SELECT 1 FROM ledger_entries WHERE id = $1 AND settled_at IS NOT NULL`, [chargeId])).length === 1;

  /** Runs `fault` in place of the next settle statement, which it may start itself (`settle`). */
  function atTheNextSettle(instance: Medium, fault: (settle: () => Promise<Set<string>>, chargeIds: string[]) => Promise<Set<string>>): void {
    const repository = instance.get(CreditsRepository);
    const settleMany = repository.settleMany.bind(repository);
    jest.spyOn(repository, 'settleMany').mockImplementationOnce((settles) => fault(() => settleMany(settles), settles.map((settle) => settle.chargeId)));
  }

  /** The next settle commits and its reply is lost; then every connection is reset, and new ones refused until `proxy.acceptNew()`. */
  function loseTheSettlesReply(instance: Medium, through: TcpProxy): void {
    atTheNextSettle(instance, async (settle, [chargeId]) => {
      through.loseReplies();
      const statement = settle();
      expect(await eventually(() => settledInDatabase(chargeId), Boolean, 10_000, 10)).toBe(true);
      through.reset();
      through.refuseNew();
      return statement;
    });
  }

  const call = (account: Parameters<ReturnType<typeof paidCalls>>[0], instance = p) => paidCalls(instance)(account, distinctNumbers(1, 70 + seed++)[0]);

  /** Resolves once the (spied) method has failed `count` times: the database was away when it was tried. */
  async function failedAttempts(instance: Medium, method: 'resolveUnanswered' | 'refundAnswered503', count: number): Promise<void> {
    const repository = instance.get(CreditsRepository);
    const spy = jest.isMockFunction(repository[method]) ? (repository[method] as jest.Mock) : jest.spyOn(repository, method);
    const failures = async () => {
      const settled = await Promise.all(spy.mock.results.map((result) => Promise.resolve(result.value).then(() => false, () => true)));
      return settled.filter(Boolean).length;
    };
    expect(await eventually(failures, (n) => n >= count, 20_000, 10)).toBeGreaterThanOrEqual(count);
  }

  it('the settle committed, its reply lost, the connections reset and refused for a moment: answered 200, charged once', async () => {
    const account = await createAccount(m, { credits: 40 });
    jest.spyOn(p.get(CreditsRepository), 'resolveUnanswered');
    // The settle is in; its reply never comes. Every connection is reset, new ones refused: the first
    // attempt at resolving the outcome (on a fresh connection) fails as well.
    loseTheSettlesReply(p, proxy);
    const answered = watched(call(account));
    await failedAttempts(p, 'resolveUnanswered', 1);
    proxy.acceptNew();
    await advanceWhilePaused(p.clock, answered.done, { stepMs: 100 });
    expect(await answered.result).toMatchObject({ ok: true });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({
      balance: 36,
      ledgerSum: 36,
      byType: { TOPUP: 1, CHARGE: 1 },
      unsettledCharges: 0,
    });
  });

  it('the connections reset before the settle reached the database: answered 503 with the charge refunded before the answer', async () => {
    const account = await createAccount(m, { credits: 40 });
    jest.spyOn(p.get(CreditsRepository), 'resolveUnanswered');
    atTheNextSettle(p, async (settle) => {
      proxy.reset();
      proxy.refuseNew();
      return settle();
    });
    const answered = watched(call(account));
    await failedAttempts(p, 'resolveUnanswered', 1);
    proxy.acceptNew();
    await advanceWhilePaused(p.clock, answered.done, { stepMs: 100 });
    const outcome = await answered.result;
    expect(outcome).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/Nothing was charged/) });
    // Not left to the sweep: refunded before the 503 was given.
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({
      balance: 40,
      ledgerSum: 40,
      byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 },
      unsettledCharges: 0,
    });
  });

  it('the database unreachable for longer than the resolution: 503 that does not claim "nothing charged", and the settled charge is given back once it answers', async () => {
    const account = await createAccount(m, { credits: 40 });
    loseTheSettlesReply(p, proxy);
    const answered = watched(call(account));
    // Every attempt at resolving the outcome finds the database away: its pauses pass, the call answers.
    await advanceWhilePaused(p.clock, answered.done, { stepMs: 100 });
    const outcome: CallOutcome = await answered.result;
    expect(outcome).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE', message: OUTCOME_UNKNOWN });
    expect(outcome.ok || outcome.message).not.toMatch(/Nothing was charged/);
    expect(outcome.ok || outcome.message).toMatch(/given back automatically/);
    // Held in this instance's memory until then, and shown on /metrics.
    const pendingGiveBacks = async () => /^phone_filter_credits_give_backs_pending (\S+)$/m.exec(await p.get(Metrics).registry.metrics())?.[1];
    expect(await pendingGiveBacks()).toBe('1');
    // Still away at the first attempt of the give-back.
    jest.spyOn(p.get(CreditsRepository), 'refundAnswered503');
    const giveBacks = p.get(PendingGiveBacks);
    await p.clock.advance(GIVE_BACK_PAUSE_MS);
    await failedAttempts(p, 'refundAnswered503', 1);
    expect(giveBacks.count).toBe(1);
    // Once connections are accepted again, the settled charge of the 503 is refunded, exactly once.
    proxy.acceptNew();
    await advanceWhilePaused(p.clock, () => giveBacks.count === 0, { stepMs: GIVE_BACK_PAUSE_MS });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 40, ledgerSum: 40, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
    expect(await pendingGiveBacks()).toBe('0');
  });

  it('the upstream failed and the refund hit a reset connection: refunded on a fresh one before the 503, not left to the sweep', async () => {
    const account = await createAccount(m, { credits: 40 });
    const repository = p.get(CreditsRepository);
    const refund = repository.refund.bind(repository);
    jest.spyOn(repository, 'refund').mockImplementationOnce(async (chargeId, reason) => {
      proxy.reset();
      proxy.refuseNew();
      return refund(chargeId, reason);
    });
    jest.spyOn(repository, 'resolveUnanswered');
    const answered = watched(paidCalls(p)(account, TEST_NUMBERS.failing));
    await failedAttempts(p, 'resolveUnanswered', 1);
    proxy.acceptNew();
    await advanceWhilePaused(p.clock, answered.done, { stepMs: 50 });
    expect(await answered.result).toMatchObject({ ok: false, code: 'PROVIDER_UNAVAILABLE' });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({
      balance: 40,
      ledgerSum: 40,
      byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 },
      unsettledCharges: 0,
    });
  });

  it('a graceful shutdown with 503 charges still to give back waits for their give-back before it closes the database', async () => {
    const { instance, proxy: itsProxy } = await behindProxy(m);
    let closed = false;
    try {
      const account = await createAccount(m, { credits: 40 });
      // The settle commits, its reply is lost, and the database refuses connections.
      loseTheSettlesReply(instance, itsProxy);
      const answered = watched(call(account, instance));
      await advanceWhilePaused(instance.clock, answered.done, { stepMs: 100 });
      expect(await answered.result).toMatchObject({ ok: false, code: 'SERVICE_UNAVAILABLE', message: expect.stringMatching(/given back automatically/) });
      // Stopped at once (SIGTERM in production): the close waits for the give-back, then the pool closes.
      jest.spyOn(instance.get(CreditsRepository), 'refundAnswered503');
      const closing = watched(instance.close().then(() => (closed = true)));
      await instance.clock.advance(GIVE_BACK_PAUSE_MS);
      await failedAttempts(instance, 'refundAnswered503', 1);
      expect(closing.done()).toBe(false);
      itsProxy.acceptNew();
      await advanceWhilePaused(instance.clock, closing.done, { stepMs: GIVE_BACK_PAUSE_MS });
      await closing.result;
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({
        balance: 40,
        ledgerSum: 40,
        byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 },
        unsettledCharges: 0,
      });
    } finally {
      if (!closed) await instance.close();
      await itsProxy.cut();
    }
  });
});
