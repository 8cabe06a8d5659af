import request from 'supertest';
import { DataSource } from 'typeorm';
import { CreditsRepository } from '../src/credits/credits.repository';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { eventually } from './helpers/eventually';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { proxiedDatabaseUrl, TcpProxy } from './helpers/tcp-proxy';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * The chaos run's "503 that stays charged": PostgreSQL connections reset while a call's settle runs.
 * The app talks to PostgreSQL through a TCP proxy; the test reaches the settle statement through a
 * hook on CreditsRepository.settleMany and breaks the connections exactly there, while it watches
 * the database directly (not through the proxy).
 */
describe('a settle whose reply is lost: the outcome is resolved, never guessed', () => {
  let direct: DataSource;
  let proxy: TcpProxy;
  let t: TestApp;
  let seed = 0;

  beforeAll(async () => {
    direct = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL });
    await direct.initialize();
    const proxied = await proxiedDatabaseUrl(process.env.DATABASE_URL!);
    proxy = proxied.proxy;
    t = await startTestApp({ DATABASE_URL: proxied.url });
  });
  afterAll(async () => {
    await t.close();
    await proxy.cut();
    await direct.destroy();
  });
  afterEach(() => jest.restoreAllMocks());

  const settledInDatabase = async (chargeId: string) =>
    (await direct.query(`SELECT 1 FROM ledger_entries WHERE id = $1 AND settled_at IS NOT NULL`, [chargeId])).length === 1;

  /** Runs `fault` in place of the next settle statement, which it may start itself (`settle`). */
  function atTheNextSettle(fault: (settle: () => Promise<Set<string>>, chargeIds: string[]) => Promise<Set<string>>): void {
    const repository = t.app.get(CreditsRepository);
    const settleMany = repository.settleMany.bind(repository);
    jest.spyOn(repository, 'settleMany').mockImplementationOnce((settles) => fault(() => settleMany(settles), settles.map((settle) => settle.chargeId)));
  }

  /** The next settle commits and its reply is lost; then every connection is reset, new ones refused for `refuseForMs`. */
  function loseTheSettlesReply(refuseForMs: number): void {
    atTheNextSettle(async (settle, [chargeId]) => {
      proxy.loseReplies();
      const statement = settle();
      expect(await eventually(() => settledInDatabase(chargeId), Boolean, 5000, 10)).toBe(true);
      proxy.reset(refuseForMs);
      return statement;
    });
  }

  const call = (auth: Record<string, string>) => request(t.http).post('/api/v1/filter').set(auth).send({ phone: distinctNumbers(1, 70 + seed++)[0] });

  it('the settle committed, its reply lost, the connections reset and refused for a moment: answered 200, charged once', async () => {
    const account = await createAccount(t, { credits: 40 });
    // The settle is in; its reply never comes. Every connection is reset, new ones refused for 300 ms:
    // the first give-back through the pool fails as well.
    loseTheSettlesReply(300);
    const res = await call(account.auth);
    expect(res.status).toBe(200);
    expect(await ledgerState(direct, account.id, { waitForSettlement: false })).toEqual({
      balance: 36,
      ledgerSum: 36,
      byType: { TOPUP: 1, CHARGE: 1 },
      unsettledCharges: 0,
    });
  });

  it('the connections reset before the settle reached the database: answered 503 with the charge refunded before the answer', async () => {
    const account = await createAccount(t, { credits: 40 });
    atTheNextSettle(async (settle) => {
      proxy.reset(300);
      return settle();
    });
    const res = await call(account.auth);
    expectError(res, 503, 'SERVICE_UNAVAILABLE');
    expect(res.body.error.message).toMatch(/Nothing was charged/);
    // Not left to the sweep: refunded before the 503 left.
    expect(await ledgerState(direct, account.id, { waitForSettlement: false })).toEqual({
      balance: 40,
      ledgerSum: 40,
      byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 },
      unsettledCharges: 0,
    });
  });

  it('the database unreachable for longer than the resolution: 503 that does not claim "nothing charged", and the settled charge is given back once it answers', async () => {
    const account = await createAccount(t, { credits: 40 });
    const credits = t.app.get(CreditsService);
    credits.resolvePausesMs = [50, 50];
    try {
      loseTheSettlesReply(2500);
      const res = await call(account.auth);
      expectError(res, 503, 'SERVICE_UNAVAILABLE');
      expect(res.body.error.message).not.toMatch(/Nothing was charged/);
      expect(res.body.error.message).toMatch(/given back automatically/);
      // Held in this instance's memory until then, and shown on /metrics.
      const pendingGiveBacks = async () => /^phone_filter_credits_give_backs_pending (\S+)$/m.exec((await request(t.http).get('/metrics').expect(200)).text)?.[1];
      expect(await pendingGiveBacks()).toBe('1');
      // Once connections are accepted again, the settled charge of the 503 is refunded, exactly once.
      const state = await eventually(() => ledgerState(direct, account.id, { waitForSettlement: false }), (s) => s.balance === 40, 10_000, 100);
      expect(state).toEqual({ balance: 40, ledgerSum: 40, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
      expect(await eventually(pendingGiveBacks, (count) => count === '0', 5000, 50)).toBe('0');
    } finally {
      credits.resolvePausesMs = [100, 250, 500, 1000];
    }
  });

  it('the upstream failed and the refund hit a reset connection: refunded on a fresh one before the 503, not left to the sweep', async () => {
    const account = await createAccount(t, { credits: 40 });
    const repository = t.app.get(CreditsRepository);
    const refund = repository.refund.bind(repository);
    jest.spyOn(repository, 'refund').mockImplementationOnce(async (chargeId, reason) => {
      proxy.reset(150);
      return refund(chargeId, reason);
    });
    const res = await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: TEST_NUMBERS.failing });
    expectError(res, 503, 'PROVIDER_UNAVAILABLE');
    expect(await ledgerState(direct, account.id, { waitForSettlement: false })).toEqual({
      balance: 40,
      ledgerSum: 40,
      byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 },
      unsettledCharges: 0,
    });
  });
});

describe('a graceful shutdown with 503 charges still to give back', () => {
  it('waits for their give-back before it closes the database', async () => {
    const direct = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL });
    await direct.initialize();
    const { proxy, url } = await proxiedDatabaseUrl(process.env.DATABASE_URL!);
    const app = await startTestApp({ DATABASE_URL: url, SHUTDOWN_TIMEOUT_MS: '20000' });
    let closed = false;
    try {
      const account = await createAccount(app, { credits: 40 });
      app.app.get(CreditsService).resolvePausesMs = [50, 50];
      // The settle commits, its reply is lost, and the database refuses connections for 2.5 s.
      const repository = app.app.get(CreditsRepository);
      const settleMany = repository.settleMany.bind(repository);
      jest.spyOn(repository, 'settleMany').mockImplementationOnce(async (settles) => {
        proxy.loseReplies();
        const statement = settleMany(settles);
        const chargeId = settles[0].chargeId;
        expect(await eventually(async () => (await direct.query(`SELECT 1 FROM ledger_entries WHERE id = $1 AND settled_at IS NOT NULL`, [chargeId])).length, Boolean, 5000, 10)).toBe(1);
        proxy.reset(2500);
        return statement;
      });
      const res = await request(app.http).post('/api/v1/filter').set(account.auth).send({ phone: distinctNumbers(1, 89)[0] });
      expectError(res, 503, 'SERVICE_UNAVAILABLE');
      expect(res.body.error.message).toMatch(/given back automatically/);
      // Stopped at once (SIGTERM in production): the close waits for the give-back, then the pool closes.
      await app.close();
      closed = true;
      expect(await ledgerState(direct, account.id, { waitForSettlement: false })).toEqual({
        balance: 40,
        ledgerSum: 40,
        byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 },
        unsettledCharges: 0,
      });
    } finally {
      jest.restoreAllMocks();
      if (!closed) await app.close();
      await proxy.cut();
      await direct.destroy();
    }
  });
});
