import { AdminModule } from '../../../src/admin/admin.module';
import { FilterModule } from '../../../src/filter/filter.module';
import { IdempotencyRepository } from '../../../src/idempotency/idempotency.repository';
import { SettingsService } from '../../../src/settings/settings.service';
import { createAccount } from '../../factories/accounts';
import { ledgerState } from '../../helpers/ledger';
import { TEST_NUMBERS } from '../../helpers/numbers';
import { Medium, startMedium } from '../medium';
import { paidCalls } from '../paid-calls';

/**
 * Review finding #15: a retry with the same Idempotency-Key that arrives after the first attempt's
 * settle but before its answer is stored is answered again without a charge — with the account's
 * checks of NOW. Checks enabled in between were answered free. The test holds the first attempt
 * exactly in that window (a hook on IdempotencyRepository.complete, released by the test), enables
 * portability, and sends the retry (moved from test/idempotency-answer-window.e2e-spec.ts: the same
 * window, through the services instead of HTTP).
 */
describe('an Idempotency-Key retry between the settle and the stored answer', () => {
  let m: Medium;
  beforeAll(async () => (m = await startMedium({ imports: [AdminModule, FilterModule] })));
  afterAll(() => m.close());

  it('is answered with the checks the first attempt was charged for, not the checks enabled since', async () => {
    const account = await createAccount(m, { credits: 40 });
    const call = paidCalls(m);
    const key = `window-${account.id}`;
    const repository = m.get(IdempotencyRepository);
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

    const first = call(account, TEST_NUMBERS.ported, { key });
    await reached;
    const [charge] = await m.db.query(`SELECT settled_at IS NOT NULL AS settled FROM ledger_entries WHERE account_id = $1 AND type = 'CHARGE'`, [account.id]);
    expect(charge).toEqual({ settled: true });

    // Enabled between the charge (network_status only, 4 credits) and the retry.
    await m.get(SettingsService).update(account.id, { checks: { portability: true } });
    const retry = await call(account, TEST_NUMBERS.ported, { key });
    release();
    const answered = await first;

    expect(answered).toMatchObject({ ok: true, replayed: false });
    expect(retry).toMatchObject({ ok: true, replayed: true });
    if (!answered.ok || !retry.ok) throw new Error('answered');
    expect(JSON.parse(retry.body)).toEqual(JSON.parse(answered.body));
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 36, byType: { TOPUP: 1, CHARGE: 1 } });
  });
});
