import request from 'supertest';
import { IdempotencyRepository } from '../src/idempotency/idempotency.repository';
import { createAccount } from './factories/accounts';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { startTestApp, TestApp } from './helpers/test-app';

/**
 * Review finding #15 (unconfirmed): a retry with the same Idempotency-Key that arrives after the first
 * attempt's settle but before its answer is stored is answered again without a charge — with the
 * account's checks of NOW. Checks enabled in between were answered free. The test holds the first
 * attempt exactly in that window (a hook on IdempotencyRepository.complete, released by the test),
 * enables portability, and sends the retry.
 */
describe('an Idempotency-Key retry between the settle and the stored answer', () => {
  let t: TestApp;
  beforeAll(async () => (t = await startTestApp({ PROVIDER: 'sandbox' })));
  afterAll(() => t.close());

  it('is answered with the checks the first attempt was charged for, not the checks enabled since', async () => {
    const account = await createAccount(t, { credits: 40 });
    const key = `window-${account.id}`;
    const body = { phone: TEST_NUMBERS.ported };
    const repository = t.app.get(IdempotencyRepository);
    const complete = repository.complete.bind(repository);
    let inTheWindow!: () => void;
    const reached = new Promise<void>((resolve) => (inTheWindow = resolve));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    jest.spyOn(repository, 'complete').mockImplementationOnce(async (keyId, answer) => {
      inTheWindow(); // settled, answer not stored yet
      await released;
      return complete(keyId, answer);
    });

    const first = request(t.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', key).send(body).then((res) => res);
    await reached;
    const [charge] = await t.db.query(`SELECT settled_at IS NOT NULL AS settled FROM ledger_entries WHERE account_id = $1 AND type = 'CHARGE'`, [account.id]);
    expect(charge).toEqual({ settled: true });

    // Enabled between the charge (network_status only, 4 credits) and the retry.
    await request(t.http).patch('/api/v1/settings').set(account.auth).send({ checks: { portability: true } }).expect(200);
    const retry = await request(t.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', key).send(body);
    release();
    const answered = await first;

    expect(answered.status).toBe(200);
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual(answered.body);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 36, byType: { TOPUP: 1, CHARGE: 1 } });
  });
});
