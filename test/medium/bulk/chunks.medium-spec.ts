import type PgBoss from 'pg-boss';
import { AdminModule } from '../../../src/admin/admin.module';
import type { AuthenticatedAccount } from '../../../src/auth/authenticated-account';
import { BulkModule } from '../../../src/bulk/bulk.module';
import { BulkProcessor, ENTRY_GIVEN_UP } from '../../../src/bulk/bulk.processor';
import { BulkQueue, ChunkTask } from '../../../src/bulk/bulk-queue';
import { BulkService } from '../../../src/bulk/bulk.service';
import { createAccount, TestAccount } from '../../factories/accounts';
import { distinctNumbers } from '../../helpers/bulk';
import { ledgerState } from '../../helpers/ledger';
import { Medium, startMedium } from '../medium';

const callerOf = (account: TestAccount): AuthenticatedAccount => ({ accountId: account.id, keyId: 'medium-test', plan: { name: 'enterprise', limit: 1000, windowSeconds: 1 } });

/**
 * How bulk chunks are handed out and given up, without HTTP and without a worker polling: this
 * instance starts no chunk worker (BulkQueue.work is stubbed), and the test takes each chunk from the
 * queue as one worker would (pg-boss's own fetch, in its own order) and runs the processor's step on it.
 * Moved from test/bulk-give-up.e2e-spec.ts and test/bulk-fairness.e2e-spec.ts.
 */
describe('bulk chunks: fairness between accounts, and a chunk given up (sandbox provider)', () => {
  let m: Medium;
  let boss: PgBoss;
  let queue: BulkQueue;
  let processor: BulkProcessor;
  let work: jest.SpyInstance;
  beforeAll(async () => {
    work = jest.spyOn(BulkQueue.prototype, 'work').mockResolvedValue(undefined);
    m = await startMedium({ imports: [BulkModule, AdminModule], env: { PROVIDER: 'sandbox', BULK_CHUNK_SIZE: '10', BULK_CHUNK_RETRIES: '1' } });
    queue = m.get(BulkQueue);
    // The queue's own pg-boss, to take chunks as a worker does (BulkQueue keeps it to itself).
    boss = (queue as unknown as { boss: PgBoss }).boss;
    processor = m.get(BulkProcessor);
  });
  afterAll(async () => {
    await m?.close();
    work.mockRestore();
  });

  const submit = async (account: TestAccount, phones: string[]) => (await m.get(BulkService).submit(callerOf(account), { phones })).job.id;
  const answered = async (jobIds: string[]) =>
    Number((await m.db.query(`SELECT count(*) AS n FROM bulk_entries WHERE job_id = ANY($1::uuid[]) AND done_at IS NOT NULL`, [jobIds]))[0].n);
  const statusOf = async (jobId: string) => ((await m.db.query(`SELECT status FROM bulk_jobs WHERE id = $1`, [jobId]))[0] as { status: string }).status;

  /** One worker's turn: the next chunk in the queue's order, processed and completed. */
  async function workOne(): Promise<ChunkTask | undefined> {
    const [job] = await boss.fetch<ChunkTask>(queue.chunkQueue);
    if (!job) return undefined;
    await processor.processChunk(job.data);
    await boss.complete(queue.chunkQueue, job.id);
    return job.data;
  }

  /**
   * Review finding #10: the bulk queue was first in, first out across accounts: one account's six
   * 1,000-entry jobs made another's 1-number job wait 12.5 s behind them. Chunks are taken in turn per
   * account: B's one-number job, submitted after A's six 100-entry jobs (60 chunks), is the second chunk taken.
   */
  it("a one-number job of B submitted after A's six 100-entry jobs completes before A's backlog is done", async () => {
    const a = await createAccount(m, { credits: 4 * 600 });
    const b = await createAccount(m, { credits: 40 });
    const aJobs: string[] = [];
    for (let job = 0; job < 6; job++) aJobs.push(await submit(a, distinctNumbers(100, 20 + job)));
    const bJob = await submit(b, ['+447400123456']);
    const taken: string[] = [];
    while ((await statusOf(bJob)) !== 'completed') taken.push((await workOne())!.jobId);
    // FIFO would have answered all 600 first; taken in turn, B's chunk is the second.
    expect(taken).toEqual([aJobs[0], bJob]);
    expect(await answered(aJobs)).toBe(10);
    // And A's backlog still completes, each job's chunks in order after the earlier job's.
    while (await workOne());
    for (const id of aJobs) expect(await statusOf(id)).toBe('completed');
    expect(await answered(aJobs)).toBe(600);
  });

  it("two accounts' backlogs are worked in turn: B's large job, submitted after A's, is not left until A's is done", async () => {
    const a = await createAccount(m, { credits: 4 * 200 });
    const b = await createAccount(m, { credits: 4 * 100 });
    const aJobs = [await submit(a, distinctNumbers(100, 40)), await submit(a, distinctNumbers(100, 41))];
    const bJob = await submit(b, distinctNumbers(100, 42));
    const taken: string[] = [];
    while ((await statusOf(bJob)) !== 'completed') taken.push((await workOne())!.jobId);
    // In turn: a chunk of A, one of B, ten times.
    expect(taken).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? aJobs[0] : bJob)));
    expect(await answered(aJobs)).toBe(100);
    while (await workOne());
    for (const id of aJobs) expect(await statusOf(id)).toBe('completed');
  });

  /**
   * A chunk that fails every attempt must not leave its job `processing` with its credits reserved
   * forever: pg-boss hands it to the given-up queue after BULK_CHUNK_RETRIES more attempts, whose step
   * answers what is left of it PROVIDER_UNAVAILABLE and refunds it.
   */
  it('a chunk that fails every attempt goes to the given-up queue, which answers it PROVIDER_UNAVAILABLE, refunds it, and completes the job', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const phones = distinctNumbers(13, 71); // two chunks: 10 and 3
    const jobId = await submit(account, phones);
    const chunks: Array<{ data: ChunkTask; retry_limit: number; dead_letter: string }> = await m.db.query(
      `SELECT data, retry_limit, dead_letter FROM ${m.config.bulk.queueSchema}.job WHERE name = $1 AND data->>'jobId' = $2 ORDER BY (data->>'chunk')::int`,
      [queue.chunkQueue, jobId],
    );
    // Each chunk: BULK_CHUNK_RETRIES attempts after the first, then the given-up queue.
    expect(chunks.map(({ retry_limit, dead_letter }) => ({ retry_limit, dead_letter }))).toEqual(Array(2).fill({ retry_limit: 1, dead_letter: queue.givenUpQueue }));
    // The first chunk works; the second (as a bug or a poison entry would) fails every attempt and is given up.
    await processor.processChunk(chunks[0].data);
    expect(await statusOf(jobId)).toBe('processing');
    await processor.giveUpChunk(chunks[1].data);
    expect(await statusOf(jobId)).toBe('completed');
    const job = await m.get(BulkService).get(callerOf(account), jobId);
    const connected = { result: expect.objectContaining({ status: 'CONNECTED' }), answered_by: { network_status: { provider: 'sandbox', observed_at: expect.any(String) } } };
    expect(job.results).toEqual([
      ...phones.slice(0, 10).map((phone) => ({ phone, ...connected })),
      ...phones.slice(10).map((phone) => ({ phone, error: { code: 'PROVIDER_UNAVAILABLE', message: ENTRY_GIVEN_UP } })),
    ]);
    // Reserved 13 × 4, then 3 × 4 given back, once, however often the step runs again.
    await processor.giveUpChunk(chunks[1].data);
    await processor.processChunk(chunks[0].data);
    expect(await ledgerState(m.db, account.id)).toEqual({ balance: 960, ledgerSum: 960, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
  });
});
