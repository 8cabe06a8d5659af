import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { startUpstreamSimulator, UpstreamSimulator } from '../../tools/upstream-simulator/simulator';
import { createAccount } from '../factories/accounts';
import { answeredEntries, distinctNumbers, waitForBulkJob } from '../helpers/bulk';
import { ledgerState } from '../helpers/ledger';
import { startTestApp, TestApp } from '../helpers/test-app';
import { hlrLookupsEnv } from '../provider-helpers';
import { Instance, startInstances } from './helpers/instances';

const CHUNK_TIMEOUT_SECONDS = 600;

const answered = (t: TestApp, jobId: string) => answeredEntries((sql, params) => t.db.query(sql, params), jobId);

describe('the chunks of an instance killed mid-job', () => {
  let simulator: UpstreamSimulator;
  let observer: TestApp;
  let instances: Instance[] = [];

  beforeAll(async () => {
    simulator = await startUpstreamSimulator({ latencyMs: 100 });
    // Reads the database and creates accounts; it works a queue of its own, never the instances'.
    observer = await startTestApp({ BULK_QUEUE_NAME: `bulk-observer-${randomBytes(4).toString('hex')}` });
    instances = await startInstances(2, {
      ...hlrLookupsEnv(simulator.url, { PROVIDER_TIMEOUT_MS: '3000' }),
      REDIS_URL: '',
      BULK_QUEUE_NAME: `bulk-lease-${randomBytes(4).toString('hex')}`,
      BULK_CONCURRENCY: '5',
      BULK_CHUNK_SIZE: '10',
      BULK_PARALLEL_CHUNKS: '2',
      // The last resort, far beyond this test: only the lease can bring the dead worker's chunks back.
      BULK_CHUNK_TIMEOUT_SECONDS: String(CHUNK_TIMEOUT_SECONDS),
      BULK_POLL_INTERVAL_SECONDS: '0.5',
    });
  }, 90_000);
  afterAll(async () => {
    await Promise.all(instances.map((one) => one.kill()));
    await observer?.close();
    await simulator?.close();
  });

  it('are handed out again once their lease lapses, and the other instance finishes the job, charged once', async () => {
    const [doomed, survivor] = instances;
    const account = await createAccount(observer, { credits: 2000 });
    const phones = distinctNumbers(300, 7);
    const { body } = await request(doomed.url).post('/api/v1/filter/bulk').set(account.auth).send({ phones }).expect(202);
    // 300 numbers, 5 at a time per instance, 100 ms each: about 3 s on two instances. Kill one early.
    for (let waited = 0; (await answered(observer, body.id)) < 40 && waited < 20_000; waited += 50) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await doomed.kill();
    const answeredAtKill = await answered(observer, body.id);
    expect(answeredAtKill).toBeLessThan(300);

    // Well before the chunk timeout (600 s): the lease (10 s) lapses and the survivor takes the chunks over.
    const job = await waitForBulkJob(survivor.url, account.auth, body.id, 40_000);

    expect(job).toMatchObject({ status: 'completed', total: 300, processed: 300 });
    expect(job.results).toEqual(phones.map((phone) => ({ phone, result: expect.objectContaining({ status: 'CONNECTED' }) })));
    expect(survivor.process!.output()).toMatch(/handed out again \(lease lapsed\)/);
    expect(await ledgerState(observer.db, account.id)).toEqual({ balance: 800, ledgerSum: 800, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  }, 90_000);
});
