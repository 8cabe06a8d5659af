import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { csvRecords, waitForBulkJob } from './helpers/bulk';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

async function expectBalance(t: TestApp, account: TestAccount, balance: number): Promise<void> {
  const state = await ledgerState(t.db, account.id);
  expect({ balance: state.balance, ledgerSum: state.ledgerSum }).toEqual({ balance, ledgerSum: balance });
}

describe('bulk conveniences: references, Idempotency-Key, quote, CSV uploads, max_age', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '300', BULK_POLL_INTERVAL_SECONDS: '0.5' })));
  afterAll(() => t.close());

  const submit = (account: TestAccount, body: object, key?: string) => {
    const call = request(t.http).post('/api/v1/filter/bulk').set(account.auth);
    if (key !== undefined) call.set('Idempotency-Key', key);
    return call.send(body);
  };
  const upload = (account: TestAccount, csv: string, query = '') =>
    request(t.http).post(`/api/v1/filter/bulk${query}`).set(account.auth).set('Content-Type', 'text/csv').send(csv);
  const jobCount = async (account: TestAccount) => (await request(t.http).get('/api/v1/filter/bulk').set(account.auth).expect(200)).body.jobs.length;

  describe('references', () => {
    it('echoes each entry\'s reference in the results and the CSV, entries with and without one mixed', async () => {
      const account = await createAccount(t, { credits: 100 });
      const phones = [{ phone: TEST_NUMBERS.connected, reference: 'crm-1' }, TEST_NUMBERS.absent, { phone: 'nope', reference: 'crm, "3"' }, { phone: TEST_NUMBERS.failing, reference: 'Zoë 🙂' }];
      const { body } = await submit(account, { phones }).expect(202);
      const job = await waitForBulkJob(t.http, account.auth, body.id);
      expect(job.results).toEqual([
        expect.objectContaining({ phone: TEST_NUMBERS.connected, reference: 'crm-1', result: expect.objectContaining({ status: 'CONNECTED' }) }),
        { phone: TEST_NUMBERS.absent, result: expect.objectContaining({ status: 'ABSENT' }), answered_by: { network_status: { provider: 'sandbox', observed_at: expect.any(String) } } },
        { phone: 'nope', reference: 'crm, "3"', error: expect.objectContaining({ code: 'INVALID_REQUEST' }) },
        { phone: TEST_NUMBERS.failing, reference: 'Zoë 🙂', error: expect.objectContaining({ code: 'PROVIDER_UNAVAILABLE' }) },
      ]);
      expect(job).toMatchObject({ cost: 12, charged: 12, refunded: 4 });
      const csv = await request(t.http).get(`/api/v1/filter/bulk/${body.id}/results.csv`).set(account.auth).expect(200);
      // Quoted where it must be: the reference with a comma and quotes.
      expect(csv.text).toContain('\r\nnope,"crm, ""3""",');
      const { header, rows } = csvRecords(csv.text);
      // The job's one check (network status): the answer's six fields, its provenance alone.
      expect(header).toEqual(['phone', 'reference', 'country', 'valid', 'status', 'carrier', 'line_type', 'is_ported', 'error_code', 'error_message', 'network_status_provider', 'network_status_observed_at']);
      const fields = (row: Record<string, string>) => [row.phone, row.reference, row.country, row.valid, row.status, row.error_code];
      expect(rows.map(fields)).toEqual([
        [TEST_NUMBERS.connected, 'crm-1', 'GB', 'true', 'CONNECTED', ''],
        [TEST_NUMBERS.absent, '', 'GB', 'false', 'ABSENT', ''],
        ['nope', 'crm, "3"', '', '', '', 'INVALID_REQUEST'],
        [TEST_NUMBERS.failing, 'Zoë 🙂', '', '', '', 'PROVIDER_UNAVAILABLE'],
      ]);
      await expectBalance(t, account, 100 - 8);
    });

    it.each([
      [{ phones: [{ phone: TEST_NUMBERS.connected, reference: '' }] }, /phones\[0\]\.reference must be 1 to 64 printable characters/],
      [{ phones: ['+447400123457', { phone: TEST_NUMBERS.connected, reference: 'x'.repeat(65) }] }, /phones\[1\]\.reference must be 1 to 64/],
      [{ phones: [{ phone: TEST_NUMBERS.connected, reference: 'tab\there' }] }, /phones\[0\]\.reference contains a control character/],
      [{ phones: [{ phone: TEST_NUMBERS.connected, reference: 7 }] }, /phones\[0\]\.reference must be/],
      [{ phones: [{ reference: 'r' }] }, /phones\[0\]\.phone must be a string/],
      [{ phones: [{ phone: TEST_NUMBERS.connected, note: 'r' }] }, /phones\[0\] has an unknown field "note"/],
      [{ phones: [[TEST_NUMBERS.connected]] }, /phones\[0\] must be a string or an object/],
    ])('refuses %j with 400 naming the entry, charging nothing', async (body, message) => {
      const account = await createAccount(t, { credits: 100 });
      const res = await submit(account, body);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(message);
      await expectBalance(t, account, 100);
    });
  });

  describe('Idempotency-Key', () => {
    it('answers the same job for the same key and body (202, same id), reserved and charged once', async () => {
      const account = await createAccount(t, { credits: 100 });
      const body = { phones: [TEST_NUMBERS.connected, { phone: TEST_NUMBERS.ported, reference: 'r' }], source: 'nightly' };
      const first = await submit(account, body, 'import-1').expect(202);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const again = await submit(account, body, 'import-1').expect(202);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toMatchObject({ id: first.body.id, total: 2, cost: 8 });
      await waitForBulkJob(t.http, account.auth, first.body.id);
      expect((await submit(account, body, 'import-1').expect(202)).body).toEqual({ id: first.body.id, status: 'completed', total: 2, cost: 8 });
      expect(await jobCount(account)).toBe(1);
      expect((await ledgerState(t.db, account.id)).byType).toEqual({ TOPUP: 1, CHARGE: 1 });
      await expectBalance(t, account, 92);
    });

    it('answers 409 IDEMPOTENCY_CONFLICT for the key with another body, and charges nothing more', async () => {
      const account = await createAccount(t, { credits: 100 });
      await submit(account, { phones: [TEST_NUMBERS.connected] }, 'import-2').expect(202);
      for (const other of [{ phones: [TEST_NUMBERS.absent] }, { phones: [TEST_NUMBERS.connected], max_age: 0 }, { phones: [{ phone: TEST_NUMBERS.connected, reference: 'r' }] }]) {
        expectError(await submit(account, other, 'import-2'), 409, 'IDEMPOTENCY_CONFLICT');
      }
      expect(await jobCount(account)).toBe(1);
      await expectBalance(t, account, 96);
    });

    it('makes one job of 20 concurrent submissions with one key, charged once', async () => {
      const account = await createAccount(t, { credits: 1000 });
      const body = { phones: [TEST_NUMBERS.connected, TEST_NUMBERS.absent, TEST_NUMBERS.ported] };
      const answers = await Promise.all(Array.from({ length: 20 }, () => submit(account, body, 'burst')));
      expect(answers.map((res) => res.status)).toEqual(Array(20).fill(202));
      expect(new Set(answers.map((res) => res.body.id)).size).toBe(1);
      expect(answers.filter((res) => res.headers['idempotent-replayed'] === 'true')).toHaveLength(19);
      expect(await jobCount(account)).toBe(1);
      await expectBalance(t, account, 1000 - 12);
    });

    it('replays the job to concurrent twins even when the first one used the whole daily cap (no 402 for a twin)', async () => {
      const account = await createAccount(t, { credits: 1000 });
      await request(t.http).patch('/api/v1/settings').set(account.auth).send({ daily_credit_limit: 8 }).expect(200);
      const body = { phones: [TEST_NUMBERS.connected, TEST_NUMBERS.absent] };
      const answers = await Promise.all(Array.from({ length: 4 }, () => submit(account, body, 'capped-twins')));
      expect(answers.map((res) => res.status)).toEqual([202, 202, 202, 202]);
      expect(new Set(answers.map((res) => res.body.id)).size).toBe(1);
      const [{ reservations }] = await t.db.query(`SELECT count(*)::int AS reservations FROM ledger_entries WHERE account_id = $1 AND type = 'CHARGE'`, [account.id]);
      expect(reservations).toBe(1);
      expect(await jobCount(account)).toBe(1);
      await expectBalance(t, account, 1000 - 8);
    });

    it('is per account, and a CSV upload with the same entries and options is the same request', async () => {
      const owner = await createAccount(t, { credits: 100 });
      const other = await createAccount(t, { credits: 100 });
      const json = await submit(owner, { phones: [{ phone: TEST_NUMBERS.connected, reference: 'a' }], source: 'crm' }, 'k').expect(202);
      const csv = await upload(owner, `phone,reference\n${TEST_NUMBERS.connected},a\n`, '?source=crm').set('Idempotency-Key', 'k').expect(202);
      expect(csv.body.id).toBe(json.body.id);
      const others = await submit(other, { phones: [TEST_NUMBERS.absent] }, 'k').expect(202);
      expect(others.body.id).not.toBe(json.body.id);
      await expectBalance(t, owner, 96);
      await expectBalance(t, other, 96);
    });

    it('refuses a malformed key with 400', async () => {
      const account = await createAccount(t, { credits: 100 });
      expectError(await submit(account, { phones: [TEST_NUMBERS.connected] }, 'é'.repeat(3)), 400, 'INVALID_REQUEST');
      await expectBalance(t, account, 100);
    });
  });

  describe('POST /api/v1/filter/bulk/quote', () => {
    it('answers total, billable, invalid, cost, balance and sufficient, and charges and creates nothing', async () => {
      const account = await createAccount(t, { credits: 100 });
      await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { line_type: true } }).expect(200);
      const body = { phones: [TEST_NUMBERS.connected, 'bad', { phone: TEST_NUMBERS.ported, reference: 'r' }, TEST_NUMBERS.connected] };
      const res = await request(t.http).post('/api/v1/filter/bulk/quote').set(account.auth).send(body).expect(200);
      expect(res.body).toEqual({ total: 4, billable: 3, invalid: 1, cost: 15, balance: 100, sufficient: true });
      expect(await jobCount(account)).toBe(0);
      expect((await ledgerState(t.db, account.id)).byType).toEqual({ TOPUP: 1 });
      await expectBalance(t, account, 100);
    });

    it('says when the balance does not cover the job, and quotes a CSV upload too', async () => {
      const account = await createAccount(t, { credits: 10 });
      const json = await request(t.http).post('/api/v1/filter/bulk/quote').set(account.auth).send({ phones: [TEST_NUMBERS.connected, TEST_NUMBERS.absent, TEST_NUMBERS.ported] }).expect(200);
      expect(json.body).toEqual({ total: 3, billable: 3, invalid: 0, cost: 12, balance: 10, sufficient: false });
      const csv = await request(t.http).post('/api/v1/filter/bulk/quote').set(account.auth).set('Content-Type', 'text/csv').send(`phone\n${TEST_NUMBERS.connected}\nnope\n`).expect(200);
      expect(csv.body).toEqual({ total: 2, billable: 1, invalid: 1, cost: 4, balance: 10, sufficient: true });
      await expectBalance(t, account, 10);
    });

    it('validates the body like a submission', async () => {
      const account = await createAccount(t, { credits: 10 });
      expectError(await request(t.http).post('/api/v1/filter/bulk/quote').set(account.auth).send({ phones: [] }), 400, 'INVALID_REQUEST');
    });
  });

  describe('text/csv uploads', () => {
    it('takes a header row with phone and reference, options as query parameters', async () => {
      const account = await createAccount(t, { credits: 100 });
      const csv = `\uFEFFName,Phone,Reference\r\nAda,${TEST_NUMBERS.connected},c-1\r\nBob,"+44 7400 120000",\r\nEve,not a phone,c-3\r\n`;
      const res = await upload(account, csv, '?source=crm-export').expect(202);
      expect(res.body).toMatchObject({ status: 'queued', total: 3, cost: 8 });
      const job = await waitForBulkJob(t.http, account.auth, res.body.id);
      expect(job.results).toEqual([
        expect.objectContaining({ phone: TEST_NUMBERS.connected, reference: 'c-1' }),
        expect.objectContaining({ phone: TEST_NUMBERS.absent, result: expect.objectContaining({ status: 'ABSENT' }) }),
        expect.objectContaining({ phone: 'not a phone', reference: 'c-3', error: expect.objectContaining({ code: 'INVALID_REQUEST' }) }),
      ]);
      expect((job.results[1] as object)).not.toHaveProperty('reference');
      const usage = await request(t.http).get('/api/v1/usage').set(account.auth).expect(200);
      expect(usage.body.entries[0]).toMatchObject({ type: 'CHARGE', amount: -8, source: 'crm-export' });
      await expectBalance(t, account, 92);
    });

    it.each([
      ['number\n+447400123456\n', '', /CSV line 1: the header row has no "phone" column/],
      ['phone,reference\n+447400123456,a\n+447400123457\n', '', /CSV line 3: 1 cells where the header has 2/],
      ['phone\n+447400123456\n"+447400123457\n', '', /CSV line 3: a quoted cell is not closed/],
      [`phone,reference\n+447400123456,${'r'.repeat(65)}\n`, '', /CSV line 2: the reference must be 1 to 64 printable characters/],
      [`phone\n${Array.from({ length: 1001 }, (_, i) => `+4474001${String(i).padStart(5, '0')}`).join('\n')}\n`, '', /CSV line 1002: more than 1000 rows/],
      ['phone\n+447400123456\n', '?max_age=-1', /max_age must not be less than 0|max_age must be an integer/],
      ['phone\n+447400123456\n', '?callback_url=ftp://x', /callback_url must be an http or https URL/],
      ['phone\n+447400123456\n', '?colour=red', /unknown field "colour"/],
    ])('refuses %j%s with 400 naming the problem, charging nothing', async (csv, query, message) => {
      const account = await createAccount(t, { credits: 10_000 });
      const res = await upload(account, csv, query);
      expectError(res, 400, 'INVALID_REQUEST');
      expect(res.body.error.message).toMatch(message);
      expect(await jobCount(account)).toBe(0);
      await expectBalance(t, account, 10_000);
    });

    it('accepts 1,000 rows', async () => {
      const account = await createAccount(t, { credits: 10_000 });
      const csv = `phone\n${Array.from({ length: 1000 }, (_, i) => `+4474002${String(i).padStart(5, '0')}`).join('\n')}\n`;
      const res = await request(t.http).post('/api/v1/filter/bulk/quote').set(account.auth).set('Content-Type', 'text/csv').send(csv).expect(200);
      expect(res.body).toMatchObject({ total: 1000, billable: 1000, cost: 4000 });
    });

    it('refuses another content type on the bulk route, and CSV on /filter', async () => {
      const account = await createAccount(t, { credits: 100 });
      const xml = await request(t.http).post('/api/v1/filter/bulk').set(account.auth).set('Content-Type', 'application/xml').send('<phones/>');
      expectError(xml, 400, 'INVALID_REQUEST');
      expect(xml.body.error.message).toMatch(/application\/json or text\/csv/);
      const filter = await request(t.http).post('/api/v1/filter').set(account.auth).set('Content-Type', 'text/csv').send('phone\n+447400123456\n');
      expectError(filter, 400, 'INVALID_REQUEST');
      await expectBalance(t, account, 100);
    });
  });

  describe('max_age', () => {
    it('0 looks every number up live (a 0005 number changes), without it the cached answer is used, same price', async () => {
      const account = await createAccount(t, { credits: 100 });
      const alternating = '+447400990005';
      expect((await request(t.http).post('/api/v1/filter').set(account.auth).send({ phone: alternating }).expect(200)).body.status).toBe('CONNECTED');
      const cached = await submit(account, { phones: [alternating] }).expect(202);
      expect((await waitForBulkJob(t.http, account.auth, cached.body.id)).results).toEqual([expect.objectContaining({ result: expect.objectContaining({ status: 'CONNECTED' }) })]);
      const live = await submit(account, { phones: [alternating], max_age: 0 }).expect(202);
      expect(live.body.cost).toBe(4);
      expect((await waitForBulkJob(t.http, account.auth, live.body.id)).results).toEqual([expect.objectContaining({ result: expect.objectContaining({ status: 'ABSENT' }) })]);
      const csvLive = await upload(account, `phone\n${alternating}\n`, '?max_age=0').expect(202);
      expect((await waitForBulkJob(t.http, account.auth, csvLive.body.id)).results).toEqual([expect.objectContaining({ result: expect.objectContaining({ status: 'CONNECTED' }) })]);
      await expectBalance(t, account, 100 - 4 * 4);
    });

    it.each([[-1], [1.5], ['0']])('refuses max_age %j with 400', async (maxAge) => {
      const account = await createAccount(t, { credits: 100 });
      expectError(await submit(account, { phones: [TEST_NUMBERS.connected], max_age: maxAge }), 400, 'INVALID_REQUEST');
      await expectBalance(t, account, 100);
    });
  });
});
