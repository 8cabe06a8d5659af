import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount } from './factories/accounts';
import { distinctNumbers } from './helpers/bulk';
import { eventually } from './helpers/eventually';
import { ledgerState } from './helpers/ledger';
import { freePort, startServiceProcess } from './helpers/service-process';
import { startTestApp, TestApp } from './helpers/test-app';
import { waitForRound } from './helpers/watchlists';
import { hlrLookupsEnv } from './provider-helpers';

/** A start-up of the built service on a loaded machine: generous, it is waited for as an event (its log line). */
const STARTUP_MS = 120_000;

async function checkedSoFar(t: TestApp, watchlistId: string, round: number): Promise<number> {
  const [row] = await t.db.query(`SELECT count(*) AS done FROM watchlist_entries WHERE watchlist_id = $1 AND checked_round >= $2`, [watchlistId, round]);
  return Number(row.done);
}

/** Per number of the watchlist: its CHARGE rows and their net amount after refunds, from the ledger. */
async function chargesPerNumber(t: TestApp, watchlistId: string): Promise<{ numbers: number; charges: number; maxPerNumber: number }> {
  const [row] = await t.db.query(
    `SELECT count(DISTINCT reference) AS numbers, count(*) AS charges, max(n) AS max_per_number FROM (
       SELECT reference, count(*) OVER (PARTITION BY reference) AS n FROM ledger_entries
        WHERE type = 'CHARGE' AND reference LIKE 'watchlist:' || $1 || ':%') c`,
    [watchlistId],
  );
  return { numbers: Number(row.numbers), charges: Number(row.charges), maxPerNumber: Number(row.max_per_number) };
}

/**
 * A round survives a kill -9 of the process running it. (Two instances sharing a schedule, and the
 * take-over of a round whose instance stopped renewing its lease: test/medium/watchlists/rounds.medium-spec.ts.)
 */
describe('watchlist rounds across processes', () => {
  let simulator: UpstreamSimulator;
  let t: TestApp;

  beforeAll(async () => {
    simulator = await startUpstreamSimulator({ latencyMs: 50 });
    // This app only reads the database: it runs no rounds.
    t = await startTestApp({ WATCHLIST_WORKER: 'false', WATCHLIST_SCHEDULE_GROUP: `wl-observer-${randomBytes(4).toString('hex')}` });
  });
  afterAll(async () => {
    await t?.close();
    await simulator?.close();
  });

  const env = (group: string) => ({
    ...hlrLookupsEnv(simulator.url, { PROVIDER_TIMEOUT_MS: '3000' }),
    REDIS_URL: '', // an in-memory cache per process (rounds are live anyway)
    WATCHLIST_SCHEDULE_GROUP: group,
    WATCHLIST_CONCURRENCY: '10',
    WATCHLIST_CHUNK_SIZE: '50',
    WATCHLIST_POLL_INTERVAL_MS: '200',
    WATCHLIST_LEASE_SECONDS: '3',
  });

  it('resumes a round of 1,000 numbers after kill -9: every number checked once and charged once', async () => {
    const account = await createAccount(t, { credits: 10_000 });
    const group = `wl-restart-${randomBytes(4).toString('hex')}`;
    const phones = distinctNumbers(1000, 61);
    const port = await freePort();

    const first = await startServiceProcess(env(group), port, { compiled: true });
    let id: string;
    let checkedBeforeKill: number;
    try {
      await first.waitFor(/listening on/, STARTUP_MS);
      const res = await request(first.baseUrl).post('/api/v1/watchlists').set(account.auth).send({ phones, interval: 'daily' }).expect(201);
      id = res.body.id;
      expect(res.body).toMatchObject({ total: 1000, cost_per_round: 4000 });
      // 1,000 numbers, 10 at a time, 50 ms each: about 5 s. Kill it a fifth of the way.
      await eventually(() => checkedSoFar(t, id, 1), (checked) => checked >= 200, 60_000, 20);
      await first.stop('SIGKILL');
      checkedBeforeKill = await checkedSoFar(t, id, 1);
      expect(checkedBeforeKill).toBeGreaterThanOrEqual(200);
      expect(checkedBeforeKill).toBeLessThan(1000);
    } finally {
      await first.stop('SIGKILL');
    }

    simulator.resetStats();
    const second = await startServiceProcess(env(group), port, { compiled: true });
    try {
      await second.waitFor(/listening on/, STARTUP_MS);
      const done = await waitForRound(second.baseUrl, account.auth, id, 1, 90_000);
      expect(done.last_round).toMatchObject({ round: 1, checked: 1000, failed: 0, changes: 0 });
    } finally {
      await second.stop();
    }
    // The restarted process looked up exactly the numbers without a recorded answer: none twice.
    expect(simulator.stats().byPath['/hlr-lookup']).toBe(1000 - checkedBeforeKill);
    expect(await checkedSoFar(t, id, 1)).toBe(1000);
    expect(await chargesPerNumber(t, id)).toEqual({ numbers: 1000, charges: 1000, maxPerNumber: 1 });
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 6000, ledgerSum: 6000, byType: { TOPUP: 1, CHARGE: 1000 }, unsettledCharges: 0 });
  }, 400_000);
});
