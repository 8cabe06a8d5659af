import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { createAccount } from './factories/accounts';
import { waitForBulkJob } from './helpers/bulk';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

/** The headers that describe a body: a replay must carry the same ones. */
const DESCRIBING = ['content-type', 'content-length'];

describe('an answer is given again byte for byte', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox', BULK_POLL_INTERVAL_SECONDS: '0.5', BULK_QUEUE_NAME: `bulk-bytes-${randomBytes(4).toString('hex')}` })));
  afterAll(() => t.close());

  const filter = (auth: { Authorization: string }, key: string, phone: string) =>
    request(t.http).post('/api/v1/filter').set(auth).set('Idempotency-Key', key).send({ phone });

  it('an Idempotency-Key replay is the first answer byte for byte, key order included, with the same describing headers', async () => {
    const account = await createAccount(t, { credits: 100 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { line_type: true, portability: true } }).expect(200);
    for (const phone of [TEST_NUMBERS.connected, TEST_NUMBERS.ported, '+10000000000']) {
      const key = `bytes-${phone}`;
      const first = await filter(account.auth, key, phone).expect(200);
      expect(Object.keys(JSON.parse(first.text))).toEqual(['country', 'valid', 'status', 'carrier', 'line_type', 'is_ported']);
      const replay = await filter(account.auth, key, phone).expect(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.text).toBe(first.text);
      for (const header of DESCRIBING) expect(replay.headers[header]).toBe(first.headers[header]);
    }
  });

  it('bulk results keep the key order of /filter answers', async () => {
    const account = await createAccount(t, { credits: 100 });
    const single = await filter(account.auth, 'bulk-order', TEST_NUMBERS.ported).expect(200);
    const job = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).send({ phones: [TEST_NUMBERS.ported, TEST_NUMBERS.connected] }).expect(202);
    const done = await waitForBulkJob(t.http, account.auth, job.body.id);
    const results = done.results as Array<{ result: object }>;
    expect(JSON.stringify(results[0].result)).toBe(single.text);
    expect(Object.keys(results[1].result)).toEqual(Object.keys(JSON.parse(single.text)));
  });
});
