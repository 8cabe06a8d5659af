import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount } from './factories/accounts';
import { answeredEntries, distinctNumbers, waitForBulkJob } from './helpers/bulk';
import { eventually } from './helpers/eventually';
import { ledgerState } from './helpers/ledger';
import { freePort, startServiceProcess } from './helpers/service-process';
import { startTestApp, TestApp } from './helpers/test-app';
import { hlrLookupsEnv } from './provider-helpers';

/** A start-up of the built service on a loaded machine: generous, it is waited for as an event (its log line). */
const STARTUP_MS = 120_000;

const processedSoFar = (t: TestApp, jobId: string) => answeredEntries((sql, params) => t.db.query(sql, params), jobId);

describe('a bulk job survives a kill -9 of the process running it', () => {
  let simulator: UpstreamSimulator;
  let t: TestApp;

  beforeAll(async () => {
    simulator = await startUpstreamSimulator({ latencyMs: 100 });
    // This app only reads the database; it works a queue of its own, never the children's.
    t = await startTestApp({ BULK_QUEUE_NAME: `bulk-observer-${randomBytes(4).toString('hex')}` });
  });
  afterAll(async () => {
    await t?.close();
    await simulator?.close();
  });

  it('is resumed after restart: every entry answered once, each number looked up once, charged once', async () => {
    const account = await createAccount(t, { credits: 2000 });
    const env = {
      ...hlrLookupsEnv(simulator.url, { PROVIDER_TIMEOUT_MS: '3000' }),
      REDIS_URL: '', // an in-memory cache: the restarted process remembers nothing, so a repeated lookup would show
      BULK_QUEUE_NAME: `bulk-restart-${randomBytes(4).toString('hex')}`,
      BULK_CONCURRENCY: '5',
      BULK_CHUNK_SIZE: '10',
      BULK_PARALLEL_CHUNKS: '2',
      BULK_CHUNK_TIMEOUT_SECONDS: '4',
      BULK_QUEUE_MAINTENANCE_SECONDS: '1',
      BULK_POLL_INTERVAL_SECONDS: '0.5',
    };
    const phones = distinctNumbers(200, 5);
    const port = await freePort();

    const first = await startServiceProcess(env, port, { compiled: true });
    let jobId: string;
    let answeredBeforeKill: number;
    try {
      await first.waitFor(/listening on/, STARTUP_MS);
      const res = await request(first.baseUrl).post('/api/v1/filter/bulk').set(account.auth).send({ phones }).expect(202);
      jobId = res.body.id;
      expect(res.body).toMatchObject({ total: 200, cost: 800 });
      // 200 numbers, 5 at a time, 100 ms each: about 4 s. Kill it a fifth of the way.
      await eventually(() => processedSoFar(t, jobId), (answered) => answered >= 40, 60_000, 20);
      await first.stop('SIGKILL');
      answeredBeforeKill = await processedSoFar(t, jobId);
      expect(answeredBeforeKill).toBeGreaterThanOrEqual(40);
      expect(answeredBeforeKill).toBeLessThan(200);
    } finally {
      await first.stop('SIGKILL');
    }
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 1200, byType: { TOPUP: 1, CHARGE: 1 } });

    simulator.resetStats();
    const second = await startServiceProcess(env, port, { compiled: true });
    try {
      await second.waitFor(/listening on/, STARTUP_MS);
      const job = await waitForBulkJob(second.baseUrl, account.auth, jobId, 60_000);
      expect(job).toMatchObject({ status: 'completed', total: 200, processed: 200 });
      const origin = { network_status: { provider: 'hlr-lookups', observed_at: expect.any(String) } };
      expect(job.results).toEqual(phones.map((phone) => ({ phone, result: expect.objectContaining({ status: 'CONNECTED' }), answered_by: origin })));
    } finally {
      await second.stop();
    }
    // The restarted process looked up exactly the numbers that had no answer yet: none twice, none done again.
    expect(simulator.stats().byPath['/hlr-lookup']).toBe(200 - answeredBeforeKill);
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 1200, ledgerSum: 1200, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  }, 400_000);
});
