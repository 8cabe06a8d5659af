import { randomUUID } from 'node:crypto';
import type { QueryRunner } from 'typeorm';
import { AdminModule } from '../../../src/admin/admin.module';
import { ChargeBatcher, LANDING_MARGIN_MS, LANDING_POLL_MS } from '../../../src/credits/charge-batcher';
import { CreditsRepository } from '../../../src/credits/credits.repository';
import { CreditsService } from '../../../src/credits/credits.service';
import { PendingGiveBacks } from '../../../src/credits/pending-give-backs';
import { createAccount } from '../../factories/accounts';
import { advanceWhilePaused } from '../../helpers/clock-pauses';
import { eventually } from '../../helpers/eventually';
import { ledgerState } from '../../helpers/ledger';
import type { TcpProxy } from '../../helpers/tcp-proxy';
import { behindProxy } from '../behind-proxy';
import { Medium, startMedium } from '../medium';

/**
 * A charge statement whose connection broke still runs on the server, and may commit after the
 * window its give-back allows by the clock (a starved server, a second lock wait): the give-back
 * waits for the server process that ran it to end before it calls the charge "not landed". The
 * service (`p`) talks to PostgreSQL through a TCP proxy the test resets; session A, on `m`'s direct
 * connection, holds the account row so that the statement is still running when the window ends.
 */
describe('a charge statement still running on the server after its window', () => {
  /** The statement's own deadline (real time), far beyond what a loaded machine needs to reach the commit below. */
  const STATEMENT_TIMEOUT_MS = 120_000;
  let m: Medium;
  let p: Medium;
  let proxy: TcpProxy;
  let sessionA: QueryRunner;

  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule] });
    ({ instance: p, proxy } = await behindProxy(m));
    p.get(ChargeBatcher).timeoutMs = STATEMENT_TIMEOUT_MS;
  });
  beforeEach(async () => {
    sessionA = m.db.createQueryRunner();
    await sessionA.connect();
  });
  afterEach(() => sessionA.release());
  afterAll(async () => {
    // A case that failed may leave a give-back waiting on the clock: let it end, or closing waits for it.
    await advanceWhilePaused(p.clock, () => p.get(PendingGiveBacks).count === 0, { stepMs: 1000 });
    await p.close();
    await proxy.cut();
    await m.close();
  });

  /** The server processes of this database waiting for a lock (the statement behind session A). */
  const lockWaiters = async () =>
    (await m.db.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).map((row: { pid: number }) => row.pid);

  /**
   * A settled-at-once charge of a new account whose statement waits on the server (session A holds the
   * account row) while its connection is reset: the call fails with one give-back pending. Returns the
   * account and the server process still running the statement.
   */
  async function chargeCutOffWhileWaiting(source: string): Promise<{ account: { id: string }; waiter: number }> {
    const account = await createAccount(m, { credits: 100 });
    await sessionA.query('BEGIN');
    await sessionA.query(`SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, [account.id]);
    const charge = p.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source, settled: true });
    const [waiter] = await eventually(lockWaiters, (pids) => pids.length === 1, 30_000, 20);
    proxy.reset(); // the client sees its connection reset: the call is answered 503
    await expect(charge).rejects.toThrow();
    expect(p.get(PendingGiveBacks).count).toBe(1);
    return { account, waiter };
  }

  it('a settled-at-once charge that commits after the window, its connection reset, is given back once its server process has ended', async () => {
    const { account, waiter } = await chargeCutOffWhileWaiting('outlived');
    const giveBacks = p.get(PendingGiveBacks);

    // The window passes by the clock while the statement still waits on the server, and the give-back
    // looks once more, after the window, before the statement commits.
    const repository = p.get(CreditsRepository);
    const refundLanded = repository.refundLanded.bind(repository);
    const windowEnd = p.clock.now() + STATEMENT_TIMEOUT_MS + LANDING_MARGIN_MS;
    let looksAfterWindow = 0;
    const looks = jest.spyOn(repository, 'refundLanded').mockImplementation(async (...args) => {
      const after = p.clock.now() >= windowEnd;
      const found = await refundLanded(...args);
      if (after) looksAfterWindow++;
      return found;
    });
    try {
      await p.clock.advance(STATEMENT_TIMEOUT_MS + LANDING_MARGIN_MS);
      await advanceWhilePaused(p.clock, () => looksAfterWindow > 0, { stepMs: LANDING_POLL_MS });
      expect(await lockWaiters()).toEqual([waiter]);
      await sessionA.query('COMMIT'); // the statement takes the account and commits, then finds its client gone
      await eventually(async () => (await ledgerState(m.db, account.id, { waitForSettlement: false })).byType.CHARGE ?? 0, (n) => n === 1, 30_000, 20);

      await advanceWhilePaused(p.clock, () => giveBacks.count === 0, { stepMs: LANDING_POLL_MS });
    } finally {
      looks.mockRestore();
    }
    // e5aef70: balance 96, no REFUND (the look after the window found nothing yet and was final)
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 100, ledgerSum: 100, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 } });
  });

  it('a statement whose server process ends without committing is final as soon as the process is gone, not a minute later', async () => {
    const { account, waiter } = await chargeCutOffWhileWaiting('ended');
    const giveBacks = p.get(PendingGiveBacks);
    // Past the window, with the statement still waiting on the server: the give-back waits for its process.
    await p.clock.advance(STATEMENT_TIMEOUT_MS + LANDING_MARGIN_MS);
    expect(giveBacks.count).toBe(1);
    // The process ends without committing (terminated while it waits): the give-back ends within a few looks.
    await m.db.query(`SELECT pg_terminate_backend($1)`, [waiter]);
    await eventually(lockWaiters, (pids) => pids.length === 0, 30_000, 20);
    await sessionA.query('COMMIT');
    await advanceWhilePaused(p.clock, () => giveBacks.count === 0, { stepMs: LANDING_POLL_MS, maxMs: 5_000 });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 100, ledgerSum: 100, byType: { TOPUP: 1 } });
    expect((await ledgerState(m.db, account.id, { waitForSettlement: false })).byType.CHARGE).toBeUndefined();
  });

  it("a statement the server refused, its connection alive, is final at the window: the give-back does not wait for that connection's process", async () => {
    const giveBacks = p.get(PendingGiveBacks);
    // Not a uuid: PostgreSQL refuses the statement (22P02) and the connection goes back to the pool, its process alive.
    const charge = p.get(CreditsService).charge('not-an-account', 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'refused', settled: true });
    await expect(charge).rejects.toThrow();
    expect(giveBacks.count).toBe(1);
    // Done within a few looks past the window; waiting for the live process would take BACKEND_WAIT_MS more of the clock.
    await p.clock.advance(STATEMENT_TIMEOUT_MS + LANDING_MARGIN_MS);
    await advanceWhilePaused(p.clock, () => giveBacks.count === 0, { stepMs: LANDING_POLL_MS, maxMs: 5_000 });
  });
});
