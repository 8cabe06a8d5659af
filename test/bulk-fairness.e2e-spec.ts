import request from 'supertest';
import { createAccount } from './factories/accounts';
import { answeredEntries, distinctNumbers, waitForBulkJob } from './helpers/bulk';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * Review finding #10: the bulk queue was first in, first out across accounts: one account's six
 * 1,000-entry jobs made another's 1-number job wait 12.5 s behind them. Chunks are taken in turn per
 * account. One chunk worker, chunks of 10: account A's six jobs are 60 chunks; B's one-number job,
 * submitted after them, completes while most of A's backlog is still waiting (progress, not time).
 */
describe("bulk queue fairness between accounts", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ PROVIDER: 'sandbox', BULK_CHUNK_SIZE: '10', BULK_PARALLEL_CHUNKS: '1', BULK_CONCURRENCY: '2', BULK_POLL_INTERVAL_SECONDS: '0.5' });
  });
  afterAll(() => t.close());

  const submit = async (auth: Record<string, string>, phones: string[]) => {
    const res = await request(t.http).post('/api/v1/filter/bulk').set(auth).send({ phones });
    expect(res.status).toBe(202);
    return res.body.id as string;
  };

  it("a one-number job of B submitted after A's six 100-entry jobs completes before A's backlog is done", async () => {
    const a = await createAccount(t, { plan: 'enterprise', credits: 4 * 600 });
    const b = await createAccount(t, { plan: 'enterprise', credits: 40 });
    const aJobs: string[] = [];
    for (let job = 0; job < 6; job++) aJobs.push(await submit(a.auth, distinctNumbers(100, 20 + job)));
    const bJob = await submit(b.auth, ['+447400123456']);

    await waitForBulkJob(t.http, b.auth, bJob, 60_000);
    const aDone = (await Promise.all(aJobs.map((id) => answeredEntries((sql, params) => t.db.query(sql, params), id)))).reduce((sum, n) => sum + n, 0);
    console.info(`fairness: A had ${aDone}/600 entries answered when B's job completed`);
    // FIFO would have answered all 600 first. Taken in turn, B's chunk is among the first few.
    expect(aDone).toBeLessThanOrEqual(300);
    // And A's backlog still completes.
    for (const id of aJobs) expect(await waitForBulkJob(t.http, a.auth, id, 120_000)).toMatchObject({ status: 'completed', processed: 100 });
  });

  it("two accounts' backlogs are worked in turn: B's large job, submitted after A's, is not left until A's is done", async () => {
    const a = await createAccount(t, { plan: 'enterprise', credits: 4 * 200 });
    const b = await createAccount(t, { plan: 'enterprise', credits: 4 * 100 });
    const aJobs = [await submit(a.auth, distinctNumbers(100, 40)), await submit(a.auth, distinctNumbers(100, 41))];
    const bJob = await submit(b.auth, distinctNumbers(100, 42));
    await waitForBulkJob(t.http, b.auth, bJob, 60_000);
    const aDone = (await Promise.all(aJobs.map((id) => answeredEntries((sql, params) => t.db.query(sql, params), id)))).reduce((sum, n) => sum + n, 0);
    expect(aDone).toBeLessThan(200);
    for (const id of aJobs) await waitForBulkJob(t.http, a.auth, id, 120_000);
  });
});
