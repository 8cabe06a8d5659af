import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { BulkProcessor, ENTRY_GIVEN_UP } from '../src/bulk/bulk.processor';
import { createAccount } from './factories/accounts';
import { distinctNumbers, waitForBulkJob } from './helpers/bulk';
import { ledgerState } from './helpers/ledger';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * A chunk that fails every attempt (here: one retry) must not leave its job `processing` with its
 * credits reserved forever: its entries are answered PROVIDER_UNAVAILABLE and refunded.
 */
describe('bulk: a chunk that fails every attempt is given up', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      PROVIDER: 'sandbox',
      BULK_QUEUE_NAME: `bulk-give-up-${randomBytes(4).toString('hex')}`,
      BULK_POLL_INTERVAL_SECONDS: '0.5',
      BULK_CHUNK_RETRIES: '1',
      BULK_CHUNK_SIZE: '2',
    });
  });
  afterAll(() => t?.close());

  it('answers what is left of it PROVIDER_UNAVAILABLE, refunds it, and completes the job', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const processor = t.app.get(BulkProcessor);
    const phones = distinctNumbers(3, 71); // two chunks (BULK_CHUNK_SIZE 2)
    const poisoned = phones[2];
    const original = processor.processChunk.bind(processor);
    // The chunk holding the third number fails on every attempt (as a bug or a poison entry would); the other works.
    const processChunk = jest.spyOn(processor, 'processChunk').mockImplementation(async (task) => {
      const pending = await t.db.query(`SELECT 1 FROM bulk_entries WHERE job_id = $1 AND chunk = $2 AND phone = $3`, [task.jobId, task.chunk, poisoned]);
      if (pending.length > 0) throw new Error('poison chunk');
      return original(task);
    });
    try {
      const submitted = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones }).expect(202);
      const job = await waitForBulkJob(t.http, account.auth, submitted.body.id, 30_000);
      expect(job.processed).toBe(3);
      expect(job.results).toEqual([
        { phone: phones[0], result: expect.objectContaining({ status: 'CONNECTED' }), answered_by: { network_status: { provider: 'sandbox', observed_at: expect.any(String) } } },
        { phone: phones[1], result: expect.objectContaining({ status: 'CONNECTED' }), answered_by: { network_status: { provider: 'sandbox', observed_at: expect.any(String) } } },
        { phone: poisoned, error: { code: 'PROVIDER_UNAVAILABLE', message: ENTRY_GIVEN_UP } },
      ]);
      // Two attempts of the poisoned chunk (the first and its one retry), then the give-up worker.
      const [{ chunk }] = await t.db.query(`SELECT chunk FROM bulk_entries WHERE job_id = $1 AND phone = $2`, [submitted.body.id, poisoned]);
      const attempts = processChunk.mock.calls.filter(([task]) => task.jobId === submitted.body.id && task.chunk === chunk);
      expect(attempts).toHaveLength(2);
    } finally {
      processChunk.mockRestore();
    }
    // Reserved 3 × 4, then 4 given back for the entry that was given up.
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 992, ledgerSum: 992, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
  });
});
