import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { LookupService } from '../src/provider/lookup.service';
import { startUpstreamSimulator, UpstreamSimulator } from '../tools/upstream-simulator/simulator';
import { createAccount } from './factories/accounts';
import { distinctNumbers, waitForBulkJob } from './helpers/bulk';
import { ledgerState } from './helpers/ledger';
import { startTestApp, TestApp } from './helpers/test-app';
import { hlrLookupsEnv } from './provider-helpers';

describe('bulk jobs are shared among instances', () => {
  let simulator: UpstreamSimulator;
  let instances: TestApp[] = [];

  beforeAll(async () => {
    simulator = await startUpstreamSimulator({ latencyMs: 200 });
    const env = {
      ...hlrLookupsEnv(simulator.url, { PROVIDER_TIMEOUT_MS: '3000' }),
      BULK_QUEUE_NAME: `bulk-shared-${randomBytes(4).toString('hex')}`,
      BULK_CONCURRENCY: '5',
      BULK_CHUNK_SIZE: '10',
      BULK_POLL_INTERVAL_SECONDS: '0.5',
    };
    instances = [await startTestApp(env), await startTestApp(env)];
  });
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.close()));
    await simulator?.close();
  });

  it('lets every instance on the queue work chunks of a job submitted to one of them', async () => {
    const [first, second] = instances;
    const account = await createAccount(first, { credits: 1000 });
    const missesBefore = instances.map((instance) => instance.app.get(LookupService).counters.cache.misses);
    const { body } = await request(first.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: distinctNumbers(100, 6) }).expect(202);
    const job = await waitForBulkJob(second.http, account.auth, body.id, 30_000);
    expect(job).toMatchObject({ status: 'completed', processed: 100 });
    const lookedUp = instances.map((instance, i) => instance.app.get(LookupService).counters.cache.misses - missesBefore[i]);
    expect(lookedUp[0] + lookedUp[1]).toBe(100);
    expect(lookedUp[0]).toBeGreaterThan(0);
    expect(lookedUp[1]).toBeGreaterThan(0);
    expect(await ledgerState(first.db, account.id)).toEqual({ balance: 600, ledgerSum: 600, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  }, 60_000);
});
