import { AdminModule } from '../../../src/admin/admin.module';
import { BulkModule } from '../../../src/bulk/bulk.module';
import { BulkService } from '../../../src/bulk/bulk.service';
import { createAccount } from '../../factories/accounts';
import { distinctNumbers } from '../../helpers/bulk';
import { eventually } from '../../helpers/eventually';
import { ledgerState } from '../../helpers/ledger';
import { holdLookups } from '../lookups';
import { Medium, startMedium } from '../medium';

/**
 * Bulk jobs are shared among instances (moved from test/bulk-instances.e2e-spec.ts): two instances on
 * one database work one queue. Instance a's only chunk worker is held in its lookups on the first chunk
 * it took, so the job can complete only if instance b works the others; no upstream, no latency, no
 * deadline that a loaded machine could miss. pg-boss's own polling hands the chunks out (the library's
 * loop, not ours): the test waits for the job's row, never for a time.
 */
describe('bulk jobs are shared among instances', () => {
  let a: Medium;
  let b: Medium;
  beforeAll(async () => {
    const env = { PROVIDER: 'sandbox', BULK_CHUNK_SIZE: '10', BULK_PARALLEL_CHUNKS: '1', BULK_CONCURRENCY: '5', BULK_POLL_INTERVAL_SECONDS: '0.5' };
    a = await startMedium({ imports: [BulkModule, AdminModule], env });
    b = await startMedium({ imports: [BulkModule, AdminModule], env, joining: a });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('lets every instance on the queue work chunks of a job submitted to one of them', async () => {
    const account = await createAccount(a, { credits: 1000 });
    const phones = distinctNumbers(100, 6);
    const onA = holdLookups(a);
    const onB = holdLookups(b, false);
    try {
      const { job } = await a.get(BulkService).submit({ accountId: account.id, keyId: 'medium-test', plan: { name: 'enterprise', limit: 1000, windowSeconds: 1 } }, { phones });
      expect(job).toMatchObject({ status: 'queued', total: 100, cost: 400 });
      // a's worker takes a chunk (this instance was woken by the submission) and stays in its lookups.
      await onA.startedAtLeast(1);
      const answered = async () => Number((await a.db.query(`SELECT count(*) AS n FROM bulk_entries WHERE job_id = $1 AND done_at IS NOT NULL`, [job.id]))[0].n);
      // Every other chunk is b's to work: all 90 of their entries answered while a still holds its chunk.
      expect(await eventually(answered, (n) => n >= 90, 60_000)).toBe(90);
      onA.release();
      const done = await eventually(
        async () => (await a.db.query(`SELECT status, processed FROM bulk_jobs WHERE id = $1`, [job.id]))[0] as { status: string; processed: number },
        (row) => row.status === 'completed',
        60_000,
      );
      expect(done).toEqual({ status: 'completed', processed: 100 });
      // Each number looked up once, by one of the two: a's one chunk, b's nine.
      expect(onA.started).toHaveLength(10);
      expect(onB.started).toHaveLength(90);
      expect(new Set([...onA.started, ...onB.started])).toEqual(new Set(phones));
    } finally {
      onA.release();
      onA.restore();
      onB.restore();
    }
    expect(await ledgerState(a.db, account.id)).toEqual({ balance: 600, ledgerSum: 600, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  });
});
