import { randomBytes, randomUUID } from 'node:crypto';
import request from 'supertest';
import { BulkJobsRepository } from '../src/bulk/bulk-jobs.repository';
import { BulkQueue } from '../src/bulk/bulk-queue';
import { CreditsRepository } from '../src/credits/credits.repository';
import { LookupService } from '../src/provider/lookup.service';
import { verifyCallback } from '../src/webhooks/callback-signature';
import { createAccount, TestAccount } from './factories/accounts';
import { csvRecords, distinctNumbers, waitForBulkJob } from './helpers/bulk';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startReceiver } from './helpers/callback-receiver';
import { startTestApp, TestApp } from './helpers/test-app';
import { eventually } from './helpers/eventually';

/**
 * The bulk contract on the sandbox provider: it answers in the service's own process, and its test numbers
 * fail (0003) or answer too late (0004: after PROVIDER_TIMEOUT_MS, whatever the machine's speed) as the
 * upstream simulator does, so which entries fail never depends on how fast a loaded machine runs an
 * upstream. (Against the simulator, which shares this process and its two cores, a loaded CI machine
 * answered 33 of a 1,000-entry job's lookups past the deadline: PROVIDER_UNAVAILABLE.) The hlr-lookups
 * adapter's own answers are proven in test/hlr-lookups-contract.e2e-spec.ts and test/provider.e2e-spec.ts.
 */
describe('bulk lookups (sandbox provider)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({
      PROVIDER: 'sandbox',
      PROVIDER_TIMEOUT_MS: '300',
      BULK_QUEUE_NAME: `bulk-test-${randomBytes(4).toString('hex')}`,
      BULK_POLL_INTERVAL_SECONDS: '0.5',
      BULK_WEBHOOK_RETRY_DELAY_SECONDS: '1',
      BULK_WEBHOOK_TIMEOUT_MS: '2000',
      BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true', // the receivers of these tests listen on 127.0.0.1
    });
  });
  afterAll(() => t?.close());

  const submit = (account: TestAccount, body: unknown) => request(t.http).post('/api/v1/filter/bulk').set(account.auth).send(body as object);
  /** The completion callback's outbox row once it is no longer pending: delivered (or not), after how many attempts. */
  const deliveryOf = async (jobId: string, timeoutMs = 10_000) =>
    eventually(
      async () => ((await t.db.query(`SELECT state, attempts FROM account_events WHERE dedupe_key = $1`, [`bulk.callback:${jobId}`])) as Array<{ state: string; attempts: number }>)[0],
      (row) => row !== undefined && row.state !== 'pending',
      timeoutMs,
    );

  describe('validation', () => {
    let account: TestAccount;
    beforeAll(async () => (account = await createAccount(t, { credits: 100_000 })));

    it.each([
      ['no entries', { phones: [] }, /1 to 1000 entries/],
      ['1,001 entries', { phones: distinctNumbers(1001, 1) }, /1 to 1000 entries \(it has 1001\)/],
      ['a number instead of a string', { phones: ['+447400123456', '+447400123457', '+447400123458', 447400123459] }, /phones\[3\] must be a string/],
      ['null among the entries', { phones: [null] }, /phones\[0\] must be a string/],
      ['phones missing', {}, /phones must be an array/],
      ['phones not an array', { phones: '+447400123456' }, /phones must be an array/],
      ['an unknown field', { phones: ['+447400123456'], priority: 1 }, /unknown field "priority"/],
      ['a bad source', { phones: ['+447400123456'], source: 'a b' }, /source/],
      ['a callback_url that is not http(s)', { phones: ['+447400123456'], callback_url: 'ftp://example.com/x' }, /callback_url/],
    ])('answers 400 for %s, and charges nothing', async (_, body, message) => {
      const res = await submit(account, body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(message);
      expect((await ledgerState(t.db, account.id)).balance).toBe(100_000);
    });

    it('answers 400 when no check is enabled, before looking at the credits', async () => {
      const broke = await createAccount(t, { credits: 0 });
      await request(t.http).patch('/api/v1/settings').set(broke.auth).send({ checks: { network_status: false } }).expect(200);
      const res = await submit(broke, { phones: [TEST_NUMBERS.connected] });
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(/No check is enabled/);
    });

    it('answers 401 before validating the body', async () => {
      const res = await request(t.http).post('/api/v1/filter/bulk').send({ phones: [] });
      expectError(res, 401, 'INVALID_API_KEY');
    });
  });

  it('accepts 1,000 entries (202) and completes them, charging each one', async () => {
    const account = await createAccount(t, { credits: 5000 });
    const phones = distinctNumbers(1000, 2);
    const res = await submit(account, { phones, source: 'crm-import' }).expect(202);
    expect(res.body).toEqual({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'queued', total: 1000, cost: 4000 });
    expect((await ledgerState(t.db, account.id)).balance).toBe(1000);

    const job = await waitForBulkJob(t.http, account.auth, res.body.id, 120_000);
    expect(job).toMatchObject({ status: 'completed', total: 1000, processed: 1000, completed_at: expect.any(String) });
    expect(job.results).toHaveLength(1000);
    expect(job.results.map((entry) => (entry as { phone: string }).phone)).toEqual(phones);
    const statuses = job.results.map((entry) => (entry as { result?: { status: string } }).result?.status ?? JSON.stringify(entry));
    expect(statuses.filter((status) => status !== 'CONNECTED')).toEqual([]);
    const state = await ledgerState(t.db, account.id);
    expect(state).toEqual({ balance: 1000, ledgerSum: 1000, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  }, 180_000);

  it('answers a mixed job in input order, charging exactly the answered entries', async () => {
    const account = await createAccount(t, { credits: 1000 });
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { line_type: true, portability: true } }).expect(200);
    const cost = 7;
    const phones = [
      TEST_NUMBERS.connected,
      'not a phone',
      TEST_NUMBERS.absent,
      TEST_NUMBERS.undetermined,
      TEST_NUMBERS.ported,
      TEST_NUMBERS.failing,
      TEST_NUMBERS.slow,
      '+44 (7400) 123-456',
      '+10000000000',
      '=HYPERLINK("x")',
      '',
    ];
    const res = await submit(account, { phones }).expect(202);
    // 8 entries pass the syntax rule (the formatted copy and +10000000000 included); 3 do not.
    expect(res.body).toMatchObject({ status: 'queued', total: 11, cost: 8 * cost });

    const job = await waitForBulkJob(t.http, account.auth, res.body.id);
    expect(job.processed).toBe(11);
    expect(job).toMatchObject({ cost: 8 * cost, charged: 8 * cost, refunded: 2 * cost });
    const answered = (status: string, valid: boolean, isPorted = false) => ({
      result: { country: 'GB', valid, status, carrier: expect.any(String), line_type: 'MOBILE', is_ported: isPorted },
      answered_by: Object.fromEntries(['network_status', 'line_type', 'portability'].map((check) => [check, { provider: 'sandbox', observed_at: expect.any(String) }])),
    });
    const failed = { error: { code: 'PROVIDER_UNAVAILABLE', message: expect.stringMatching(/refunded/) } };
    const invalid = { error: { code: 'INVALID_REQUEST', message: expect.stringMatching(/E\.164/) } };
    expect(job.results).toEqual([
      { phone: TEST_NUMBERS.connected, ...answered('CONNECTED', true) },
      { phone: 'not a phone', ...invalid },
      { phone: TEST_NUMBERS.absent, ...answered('ABSENT', false) },
      { phone: TEST_NUMBERS.undetermined, ...answered('UNDETERMINED', true) },
      { phone: TEST_NUMBERS.ported, ...answered('CONNECTED', true, true) },
      { phone: TEST_NUMBERS.failing, ...failed },
      { phone: TEST_NUMBERS.slow, ...failed },
      { phone: TEST_NUMBERS.connected, ...answered('CONNECTED', true) },
      {
        phone: '+10000000000',
        result: { country: null, valid: false, status: 'ABSENT', carrier: null, line_type: 'UNKNOWN', is_ported: false },
        answered_by: null, // invalid for its plan: no provider was asked
      },
      { phone: '=HYPERLINK("x")', ...invalid },
      { phone: '', ...invalid },
    ]);
    // Charged: the 6 answered entries. The 2 failed lookups come back in one refund of the reservation.
    const state = await ledgerState(t.db, account.id);
    expect(state).toEqual({ balance: 1000 - 6 * cost, ledgerSum: 1000 - 6 * cost, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
    const usage = await request(t.http).get('/api/v1/usage').set(account.auth).expect(200);
    expect(usage.body.entries.slice(0, 2)).toEqual([
      expect.objectContaining({ type: 'REFUND', amount: 2 * cost }),
      expect.objectContaining({ type: 'CHARGE', amount: -8 * cost, source: 'internal' }),
    ]);

    const csv = await request(t.http).get(`/api/v1/filter/bulk/${res.body.id}/results.csv`).set(account.auth).expect(200);
    expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(csv.text.endsWith('\r\n')).toBe(true);
    const { header, rows } = csvRecords(csv.text);
    // The job's three checks: the answer's six fields, then which provider answered each check, and when (issue 23).
    expect(header).toEqual(['phone', 'reference', 'country', 'valid', 'status', 'carrier', 'line_type', 'is_ported', 'error_code', 'error_message',
      'network_status_provider', 'network_status_observed_at', 'line_type_provider', 'line_type_observed_at', 'portability_provider', 'portability_observed_at']);
    expect(rows).toHaveLength(phones.length);
    const observedAt = expect.stringMatching(/^\d{4}-\d\d-\d\dT/);
    expect(rows[0]).toEqual({
      phone: TEST_NUMBERS.connected, reference: '', country: 'GB', valid: 'true', status: 'CONNECTED', carrier: expect.stringMatching(/./), line_type: 'MOBILE', is_ported: 'false',
      error_code: '', error_message: '', network_status_provider: 'sandbox', network_status_observed_at: observedAt,
      line_type_provider: 'sandbox', line_type_observed_at: observedAt, portability_provider: 'sandbox', portability_observed_at: observedAt,
    });
    const empty = Object.fromEntries(header.filter((column) => !['phone', 'error_code', 'error_message'].includes(column)).map((column) => [column, '']));
    expect(rows[5]).toEqual({ ...empty, phone: TEST_NUMBERS.failing, error_code: 'PROVIDER_UNAVAILABLE', error_message: expect.stringMatching(/refunded/) });
    // A cell a spreadsheet would run as a formula is neutralised with an apostrophe.
    expect(rows[9]).toEqual({ ...empty, phone: '\'=HYPERLINK("x")', error_code: 'INVALID_REQUEST', error_message: expect.stringMatching(/E\.164/) });
  });

  it('answers 402 when the balance covers less than the whole job, and charges nothing', async () => {
    const account = await createAccount(t, { credits: 10 });
    const res = await submit(account, { phones: [TEST_NUMBERS.connected, TEST_NUMBERS.ported, TEST_NUMBERS.absent, 'bad'] });
    expectError(res, 402, 'INSUFFICIENT_CREDITS');
    expect(res.body.error.message).toMatch(/needs 12 and your balance is 10/);
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 10, ledgerSum: 10, byType: { TOPUP: 1 }, unsettledCharges: 0 });
    const list = await request(t.http).get('/api/v1/filter/bulk').set(account.auth).expect(200);
    expect(list.body).toEqual({ jobs: [], next_cursor: null });
  });

  it('refuses to run the statements of a job\'s creation outside the transaction their service opens, writing nothing', async () => {
    const account = await createAccount(t, { credits: 10 });
    const jobs = t.app.get(BulkJobsRepository);
    const outside = /must run inside a transaction/;
    // Outside a transaction the advisory xact lock would be released at once, and each write would commit alone.
    await expect(jobs.lockIdempotencyKey(account.id, 'key-1')).rejects.toThrow(outside);
    await expect(t.app.get(CreditsRepository).reserve(account.id, 4, { reference: 'outside', source: null, reason: 'outside' })).rejects.toThrow(outside);
    await expect(t.app.get(CreditsRepository).chargeMany(account.id, 4, [{ reference: 'outside-charge', phone: null, source: null, settled: true }], { joined: true })).rejects.toThrow(outside);
    await expect(t.app.get(BulkQueue).enqueueChunks(randomUUID(), 1, account.id)).rejects.toThrow(outside);
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 10, ledgerSum: 10, byType: { TOPUP: 1 }, unsettledCharges: 0 });
  });

  it("answers 404 for another account's job, an unknown id and a malformed id", async () => {
    const owner = await createAccount(t);
    const other = await createAccount(t);
    const { body } = await submit(owner, { phones: [TEST_NUMBERS.connected] }).expect(202);
    await waitForBulkJob(t.http, owner.auth, body.id);
    for (const path of [`/api/v1/filter/bulk/${body.id}`, `/api/v1/filter/bulk/${body.id}/results.csv`]) {
      expectError(await request(t.http).get(path).set(other.auth), 404, 'NOT_FOUND');
    }
    expectError(await request(t.http).get('/api/v1/filter/bulk/00000000-0000-4000-8000-000000000000').set(owner.auth), 404, 'NOT_FOUND');
    expectError(await request(t.http).get('/api/v1/filter/bulk/not-a-uuid').set(owner.auth), 404, 'NOT_FOUND');
    const list = await request(t.http).get('/api/v1/filter/bulk').set(other.auth).expect(200);
    expect(list.body.jobs).toEqual([]);
  });

  it('lists the jobs newest first, a page at a time, without results', async () => {
    const account = await createAccount(t);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await submit(account, { phones: [TEST_NUMBERS.connected, 'x'] }).expect(202)).body.id);
    const first = await request(t.http).get('/api/v1/filter/bulk?limit=2').set(account.auth).expect(200);
    expect(first.body.jobs.map((job: { id: string }) => job.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.jobs[0]).toEqual({
      id: ids[2],
      status: expect.stringMatching(/^(queued|processing|completed)$/),
      total: 2,
      processed: expect.any(Number),
      cost: 4,
      charged: 4,
      refunded: 0,
      created_at: expect.any(String),
      completed_at: first.body.jobs[0].completed_at,
    });
    const second = await request(t.http).get(`/api/v1/filter/bulk?limit=2&cursor=${first.body.next_cursor}`).set(account.auth).expect(200);
    expect(second.body).toEqual({ jobs: [expect.objectContaining({ id: ids[0] })], next_cursor: null });
    expectError(await request(t.http).get('/api/v1/filter/bulk?limit=0').set(account.auth), 400, 'INVALID_REQUEST');
    expectError(await request(t.http).get('/api/v1/filter/bulk?cursor=nope').set(account.auth), 400, 'INVALID_REQUEST');
  });

  it('advances processed while the job runs; results hold the answered entries; the CSV waits for completion', async () => {
    const account = await createAccount(t, { credits: 10_000 });
    // The lookups after the first 50 wait until the test has seen the job midway.
    const lookups = t.app.get(LookupService);
    const lookUp = lookups.lookUp.bind(lookups);
    let release!: () => void;
    const midwaySeen = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const held = jest.spyOn(lookups, 'lookUp').mockImplementation(async (...args: Parameters<LookupService['lookUp']>) => {
      if (++calls > 50) await midwaySeen;
      return lookUp(...args);
    });
    try {
      const phones = distinctNumbers(200, 3);
      const { body } = await submit(account, { phones }).expect(202);
      // Not ready: a status a client can act on (409 NOT_READY, ask again after Retry-After), not the 404 of an unknown job.
      const early = await request(t.http).get(`/api/v1/filter/bulk/${body.id}/results.csv`).set(account.auth);
      expectError(early, 409, 'NOT_READY');
      expect(early.headers['retry-after']).toBe('2');
      expect(early.body.error.message).toMatch(/^The results of bulk job [0-9a-f-]{36} are not ready: it is (queued|processing) \(\d+ of 200 entries answered\)\. Retry after 2 s/);
      const midway = await eventually(
        async () => (await request(t.http).get(`/api/v1/filter/bulk/${body.id}`).set(account.auth)).body,
        (job) => job.status === 'processing' && job.processed > 0 && job.processed < 200,
        10_000,
      );
      expect(midway).toMatchObject({ status: 'processing', completed_at: null });
      expect(midway.processed).toBeGreaterThan(0);
      expect(midway.processed).toBeLessThan(200);
      expect(midway.results).toHaveLength(midway.processed);
      release();
      expect(await waitForBulkJob(t.http, account.auth, body.id)).toMatchObject({ status: 'completed', processed: 200 });
    } finally {
      release();
      held.mockRestore();
    }
  });

  it('looks a number up once however many entries repeat it, and charges every entry', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const [number] = distinctNumbers(1, 4);
    const formatted = `${number.slice(0, 3)} ${number.slice(3, 7)} ${number.slice(7)}`;
    const lookups = jest.spyOn(t.app.get(LookupService), 'lookUp');
    const { body } = await submit(account, { phones: [number, formatted, number, `(${number})`, number] }).expect(202);
    expect(body.cost).toBe(5 * 4);
    const job = await waitForBulkJob(t.http, account.auth, body.id);
    // One lookup: every entry carries the same answer and the same origin.
    expect(job.results).toEqual(
      Array(5).fill({ phone: number, result: expect.objectContaining({ status: 'CONNECTED' }), answered_by: (job.results[0] as { answered_by: unknown }).answered_by }),
    );
    expect((job.results[0] as { answered_by: unknown }).answered_by).toEqual({ network_status: { provider: 'sandbox', observed_at: expect.any(String) } });
    expect(lookups.mock.calls.filter(([phone]) => phone === number)).toHaveLength(1);
    lookups.mockRestore();
    expect((await ledgerState(t.db, account.id)).balance).toBe(1000 - 20);
  });

  describe('the completion callback', () => {
    it('POSTs {id, status, total} once, signed with the account webhook secret', async () => {
      const receiver = await startReceiver();
      try {
        const account = await createAccount(t);
        const { webhook_secret: secret } = (await request(t.http).get('/api/v1/settings').set(account.auth).expect(200)).body;
        const { body } = await submit(account, { phones: [TEST_NUMBERS.connected, 'x'], callback_url: receiver.url }).expect(202);
        await waitForBulkJob(t.http, account.auth, body.id);
        // Delivered once: its outbox row says delivered after one attempt, and nothing delivers a delivered row again.
        expect(await deliveryOf(body.id)).toEqual({ state: 'delivered', attempts: 1 });
        expect(receiver.calls).toHaveLength(1);
        const [call] = receiver.calls;
        expect(JSON.parse(call.body)).toEqual({ id: body.id, status: 'completed', total: 2 });
        expect(call.headers['content-type']).toBe('application/json; charset=utf-8');
        const headers = { signature: call.headers['x-signature'] as string, timestamp: call.headers['x-signature-timestamp'] as string };
        expect(verifyCallback(secret, headers, call.body)).toBe(true);
        expect(verifyCallback('another-secret', headers, call.body)).toBe(false);
      } finally {
        await receiver.close();
      }
    });

    it('after a rotation, is signed with both secrets (new first) until the grace period ends, then with the new one only', async () => {
      const receiver = await startReceiver();
      try {
        const account = await createAccount(t);
        const { webhook_secret: old } = (await request(t.http).get('/api/v1/settings').set(account.auth).expect(200)).body;
        const { webhook_secret: rotated } = (await request(t.http).post('/api/v1/settings/webhook-secret').set(account.auth).expect(200)).body;
        const deliver = async () => {
          const { body } = await submit(account, { phones: [TEST_NUMBERS.connected], callback_url: receiver.url }).expect(202);
          await waitForBulkJob(t.http, account.auth, body.id);
          await eventually(() => receiver.calls.filter((call) => JSON.parse(call.body).id === body.id).length, (n) => n >= 1, 10_000);
          const call = receiver.calls.find((c) => JSON.parse(c.body).id === body.id)!;
          return { call, headers: { signature: call.headers['x-signature'] as string, timestamp: call.headers['x-signature-timestamp'] as string } };
        };

        const during = await deliver();
        expect(during.headers.signature).toMatch(/^[0-9a-f]{64},[0-9a-f]{64}$/);
        expect(verifyCallback(rotated, during.headers, during.call.body)).toBe(true);
        expect(verifyCallback(old, during.headers, during.call.body)).toBe(true);
        expect(verifyCallback('another-secret', during.headers, during.call.body)).toBe(false);

        // The grace period over (moved into the past rather than waited for):
        await t.db.query(`UPDATE account_settings SET previous_webhook_secret_expires_at = now() - interval '1 second' WHERE account_id = $1`, [account.id]);
        const after = await deliver();
        expect(after.headers.signature).toMatch(/^[0-9a-f]{64}$/);
        expect(verifyCallback(rotated, after.headers, after.call.body)).toBe(true);
        expect(verifyCallback(old, after.headers, after.call.body)).toBe(false);
      } finally {
        await receiver.close();
      }
    });

    it('retries with backoff when the receiver fails, until it answers 2xx', async () => {
      const receiver = await startReceiver([500, 503]);
      try {
        const account = await createAccount(t);
        const { webhook_secret: secret } = (await request(t.http).get('/api/v1/settings').set(account.auth).expect(200)).body;
        const { body } = await submit(account, { phones: [TEST_NUMBERS.connected], callback_url: receiver.url }).expect(202);
        await waitForBulkJob(t.http, account.auth, body.id);
        expect(await deliveryOf(body.id, 30_000)).toEqual({ state: 'delivered', attempts: 3 });
        expect(receiver.calls).toHaveLength(3);
        for (const call of receiver.calls) {
          expect(JSON.parse(call.body)).toEqual({ id: body.id, status: 'completed', total: 1 });
          const headers = { signature: call.headers['x-signature'] as string, timestamp: call.headers['x-signature-timestamp'] as string };
          expect(verifyCallback(secret, headers, call.body)).toBe(true);
        }
      } finally {
        await receiver.close();
      }
    }, 40_000);
  });
});

