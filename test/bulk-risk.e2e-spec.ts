import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { createAccount, TestAccount } from './factories/accounts';
import { csvRecords, waitForBulkJob } from './helpers/bulk';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * The HTTP shape of a bulk job submitted with `risk: true` (docs/api.md §8, docs/sms-pumping.md "Bulk
 * jobs"): the field in JSON and as a CSV upload's query parameter, the verdict per entry in the results
 * and as the CSV's last columns, a job without it unchanged, bad input refused in the contract's shape.
 * The verdicts, their price and refunds are proven in test/medium/bulk/risk-verdicts.medium-spec.ts.
 */
describe('bulk jobs with the risk verdict (sandbox provider)', () => {
  let t: TestApp;
  let account: TestAccount;

  beforeAll(async () => {
    t = await startTestApp({ PROVIDER: 'sandbox', BULK_QUEUE_NAME: `bulk-risk-${randomBytes(4).toString('hex')}`, BULK_POLL_INTERVAL_SECONDS: '0.5' });
    account = await createAccount(t, { credits: 1000 });
  });
  afterAll(() => t?.close());

  const submit = (body: unknown) => request(t.http).post('/api/v1/filter/bulk').set(account.auth).send(body as object);
  const VERDICT_KEYS = ['score', 'level', 'recommendation', 'reasons'];

  it('a JSON job with risk: true answers each entry with its verdict, and its CSV ends with the verdict columns; a job without it is unchanged', async () => {
    const run = ['+447400330140', '+447400330141', '+447400330142'];
    const withRisk = await submit({ phones: [...run, '+447555123789', 'not a number'], risk: true });
    expect(withRisk.status).toBe(202);
    expect(withRisk.body).toEqual({ id: expect.any(String), status: 'queued', total: 5, cost: 4 * 6 });
    const without = await submit({ phones: ['+447400330240', '+447400330241'] });
    expect(without.body).toMatchObject({ total: 2, cost: 2 * 4 });

    const job = await waitForBulkJob(t.http, account.auth, withRisk.body.id);
    const results = job.results as Array<Record<string, unknown> & { risk?: { recommendation: string; reasons: Array<{ code: string; message: string }> } }>;
    expect(Object.keys(results[0])).toEqual(['phone', 'result', 'answered_by', 'risk']);
    for (const entry of results.slice(0, 4)) expect(Object.keys(entry.risk!)).toEqual(VERDICT_KEYS);
    for (const entry of results.slice(0, 3)) expect(entry.risk!.reasons.map((reason) => reason.code)).toContain('SEQUENTIAL_NUMBERS');
    expect(results[3].risk).toEqual({ score: 0, level: 'low', recommendation: 'allow', reasons: [] });
    expect(results[4]).toEqual({ phone: 'not a number', error: { code: 'INVALID_REQUEST', message: expect.any(String) } });

    const csv = await request(t.http).get(`/api/v1/filter/bulk/${withRisk.body.id}/results.csv`).set(account.auth);
    expect(csv.status).toBe(200);
    const { header, rows } = csvRecords(csv.text);
    expect(header.slice(-4)).toEqual(['risk_score', 'risk_level', 'risk_recommendation', 'risk_reasons']);
    expect(rows[0].risk_reasons.split(' ')).toContain('SEQUENTIAL_NUMBERS');
    expect(rows[3]).toMatchObject({ phone: '+447555123789', risk_score: '0', risk_level: 'low', risk_recommendation: 'allow', risk_reasons: '' });

    const plain = await waitForBulkJob(t.http, account.auth, without.body.id);
    for (const entry of plain.results as Array<Record<string, unknown>>) expect(Object.keys(entry)).toEqual(['phone', 'result', 'answered_by']);
    const plainCsv = csvRecords((await request(t.http).get(`/api/v1/filter/bulk/${without.body.id}/results.csv`).set(account.auth)).text);
    expect(plainCsv.header.some((column) => column.startsWith('risk_'))).toBe(false);
  });

  it('a CSV upload takes risk=true in its query string, and the quote prices the verdicts', async () => {
    const body = 'phone,reference\r\n+447400330340,a\r\n+447911123456,b\r\n';
    const quote = await request(t.http).post('/api/v1/filter/bulk/quote?risk=true').set(account.auth).set('Content-Type', 'text/csv').send(body);
    expect(quote.body).toMatchObject({ billable: 2, cost: 2 * 6 });
    const res = await request(t.http).post('/api/v1/filter/bulk?risk=true&source=crm-import').set(account.auth).set('Content-Type', 'text/csv').send(body);
    expect(res.status).toBe(202);
    expect(res.body.cost).toBe(2 * 6);
    const job = await waitForBulkJob(t.http, account.auth, res.body.id);
    expect((job.results as Array<{ reference: string; risk: unknown }>).map((entry) => [entry.reference, Object.keys(entry.risk as object)])).toEqual([
      ['a', VERDICT_KEYS],
      ['b', VERDICT_KEYS],
    ]);
  });

  it.each([
    ['JSON, risk not a boolean', () => submit({ phones: ['+447400330440'], risk: 'yes' }), /risk must be true or false/],
    ['JSON, risk as the string "true" (JSON takes a boolean)', () => submit({ phones: ['+447400330440'], risk: 'true' }), /risk must be true or false/],
    [
      'CSV, risk=maybe',
      () => request(t.http).post('/api/v1/filter/bulk?risk=maybe').set(account.auth).set('Content-Type', 'text/csv').send('phone\r\n+447400330440\r\n'),
      /risk must be true or false/,
    ],
  ])('%s: 400 INVALID_REQUEST, nothing charged', async (_name, send, message) => {
    const before = await ledgerState(t.db, account.id);
    const res = await send();
    expectError(res, 400, 'INVALID_REQUEST');
    expect(res.body.error.message).toMatch(message);
    expect(await ledgerState(t.db, account.id)).toEqual(before);
  });
});
