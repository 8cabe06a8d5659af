import { createHash, randomUUID } from 'node:crypto';
import { AdminModule } from '../../../src/admin/admin.module';
import { keyedHash } from '../../../src/common/keyed-hash';
import { AbandonedChargesSweeper } from '../../../src/credits/abandoned-charges.sweeper';
import { CreditsService } from '../../../src/credits/credits.service';
import { FilterModule } from '../../../src/filter/filter.module';
import { createAccount, TestAccount } from '../../factories/accounts';
import { ledgerState } from '../../helpers/ledger';
import { TEST_NUMBERS } from '../../helpers/numbers';
import { refuseUpdates } from '../../helpers/refuse-updates';
import { Medium, startMedium } from '../medium';
import { CallOutcome, paidCalls } from '../paid-calls';

const hashOf = (phone: string) => createHash('sha256').update(JSON.stringify({ phone, source: 'internal' })).digest('hex');

/** The answer's bytes of an outcome that must be an answer. */
function bodyOf(outcome: CallOutcome): string {
  if (!outcome.ok) throw new Error(`expected an answer, got ${outcome.code}: ${outcome.message}`);
  return outcome.body;
}

/**
 * "Charged at most once per Idempotency-Key", enforced by the ledger, through /filter's service on two
 * instances of the services on one database (moved from test/idempotent-charges.e2e-spec.ts). A key's
 * life and an attempt's hold are aged by moving the instances' clock, not by backdating rows or
 * sleeping past the bound.
 */
describe('an Idempotency-Key is charged at most once, enforced by the ledger', () => {
  let m: Medium;
  let other: Medium;
  let bound: number;
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule, FilterModule] });
    other = await startMedium({ imports: [AdminModule, FilterModule], joining: m });
    bound = m.config.unsettledChargeRefundAfterSeconds;
  });
  afterAll(async () => {
    await other.close();
    await m.close();
  });

  /** The instances share one clock, as the hosts share the time. */
  const advance = (ms: number) => m.clock.advance(ms);
  const filter = (instance: Medium, account: TestAccount, key: string, phone: string = TEST_NUMBERS.connected) => paidCalls(instance)(account, phone, { key });

  /**
   * The outage of issue 11: a call was charged and answered, then PostgreSQL refused to store its
   * answer. A trigger makes the database refuse it (for keys of this case only), like a database that
   * died between the two statements.
   */
  const refuseToStoreAnswers = (keyPrefix: string) => refuseUpdates(m, 'idempotency_keys', `NEW.status = 'completed' AND NEW.key LIKE '${keyPrefix}%'`);

  it('a key whose answer could not be stored: a retry after the sweep bound gets the answer again, not a second charge', async () => {
    const account = await createAccount(m, { credits: 100 });
    const allowStoring = await refuseToStoreAnswers('lost-answer-');
    let first: string;
    try {
      first = bodyOf(await filter(m, account, 'lost-answer-1'));
      const [key] = await m.db.query(`SELECT status FROM idempotency_keys WHERE account_id = $1`, [account.id]);
      expect(key.status).toBe('in_progress');
      // Past the bound after which main handed an in-progress key out again; the sweep runs meanwhile.
      await advance((bound + 1) * 1000);
      expect(await m.jobs.run(AbandonedChargesSweeper.JOB)).toBe(0);
      const retry = await filter(other, account, 'lost-answer-1');
      expect((await ledgerState(m.db, account.id, { waitForSettlement: false })).byType).toEqual({ TOPUP: 1, CHARGE: 1 }); // main charged it a second time here
      expect(retry).toMatchObject({ ok: true, body: first, replayed: true });
    } finally {
      await allowStoring();
    }
    expect(await filter(m, account, 'lost-answer-1')).toMatchObject({ ok: true, body: first });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toEqual({ balance: 96, ledgerSum: 96, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  });

  it('two retries at once on two instances after the answer was lost: both answered, one charge', async () => {
    const account = await createAccount(m, { credits: 100 });
    const allowStoring = await refuseToStoreAnswers('lost-twice-');
    let first: string;
    try {
      first = bodyOf(await filter(m, account, 'lost-twice-1'));
    } finally {
      await allowStoring();
    }
    const retries = await Promise.all([filter(m, account, 'lost-twice-1'), filter(other, account, 'lost-twice-1')]);
    for (const retry of retries) expect(JSON.parse(bodyOf(retry))).toEqual(JSON.parse(first));
    expect(bodyOf(retries[0])).toBe(bodyOf(retries[1]));
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  });

  it('40 calls at once with one new key through two instances: one charge, every answer the same bytes, the others 409', async () => {
    const account = await createAccount(m, { credits: 1000 });
    const phone = '+447400135791';
    const outcomes = await Promise.all(Array.from({ length: 40 }, (_, i) => filter(i % 2 ? m : other, account, 'burst-1', phone)));
    const answered = outcomes.filter((outcome) => outcome.ok);
    expect(answered.length).toBeGreaterThanOrEqual(1);
    for (const outcome of outcomes.filter((o) => !o.ok)) expect(outcome).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT' });
    expect(new Set(answered.map(bodyOf)).size).toBe(1);
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 996, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  });

  it('the database refuses a second charge for one key id, however the charges race, until a refund frees it', async () => {
    const account = await createAccount(m, { credits: 100 });
    const [{ id: keyId }] = await m.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status, attempt) VALUES ($1, 'raced', 'x', 'in_progress', gen_random_uuid()) RETURNING id`,
      [account.id],
    );
    const charge = (instance: Medium) =>
      instance.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'test', idempotencyKeyId: keyId });
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => charge(i % 2 ? m : other)));
    const written = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    expect(written).toHaveLength(1);
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT' });

    const [first] = written as Array<PromiseFulfilledResult<{ id: string }>>;
    expect(await m.get(CreditsService).refund(first.value.id, 'test')).toBe(true);
    await expect(charge(other)).resolves.toMatchObject({ balanceAfter: 96 });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({
      balance: 96,
      ledgerSum: 96,
      byType: { TOPUP: 1, CHARGE: 2, REFUND: 1 },
    });
  });

  it('a key whose attempt died before charging: once the bound has passed, of two retries at once on two instances one runs, the other gets 409 or its replay', async () => {
    const account = await createAccount(m, { credits: 100 });
    // What an instance killed between taking the key and charging leaves behind: a key taken an hour into its life.
    const [{ created_at: createdAt }] = await m.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status, created_at, claimed_at, attempt)
       VALUES ($1, 'died-early', $2, 'in_progress', $3::timestamptz - interval '1 hour', $3, gen_random_uuid()) RETURNING created_at`,
      [account.id, hashOf(TEST_NUMBERS.connected), m.clock.date()],
    );
    expect(await filter(m, account, 'died-early')).toMatchObject({ ok: false, code: 'IDEMPOTENCY_CONFLICT' }); // held, within the bound
    await advance((bound + 1) * 1000);
    const retries = await Promise.all([filter(m, account, 'died-early'), filter(other, account, 'died-early')]);
    // One retry runs the call. The other either met it running (409) or, when the sandbox answered the
    // first before the second reached the key, gets its stored answer replayed: never a second run.
    const ran = retries.filter((outcome) => outcome.ok && !outcome.replayed);
    expect(ran).toHaveLength(1);
    const [second] = retries.filter((outcome) => outcome !== ran[0]);
    if (!second.ok) expect(second).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT' });
    else expect(second).toMatchObject({ replayed: true, body: bodyOf(ran[0]) });
    const [key] = await m.db.query(`SELECT status, created_at = $2 AS kept_its_life FROM idempotency_keys WHERE account_id = $1`, [account.id, createdAt]);
    expect(key).toEqual({ status: 'completed', kept_its_life: true });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  });

  it('a key used again after its 24 h is a new call, charged again: its old charge stays in the ledger, no longer naming it', async () => {
    const account = await createAccount(m, { credits: 100 });
    const first = bodyOf(await filter(m, account, 'expires-1'));
    await advance(23 * 3600_000);
    expect(await filter(other, account, 'expires-1')).toMatchObject({ ok: true, replayed: true, body: first }); // still its life
    await advance(2 * 3600_000);
    const again = await filter(other, account, 'expires-1');
    expect(again).toMatchObject({ ok: true, replayed: false });
    expect(JSON.parse(bodyOf(again))).toEqual(JSON.parse(first));
    const charges = await m.db.query(
      `SELECT l.idempotency_key_id = k.id AS names_the_key FROM ledger_entries l LEFT JOIN idempotency_keys k ON k.account_id = l.account_id
        WHERE l.account_id = $1 AND l.type = 'CHARGE' ORDER BY l.id`,
      [account.id],
    );
    expect(charges).toEqual([{ names_the_key: null }, { names_the_key: true }]);
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 92, byType: { TOPUP: 1, CHARGE: 2 }, unsettledCharges: 0 });
  });

  it('a key stored in progress before attempts had tokens (before the upgrade) is never taken over: 409 until its 24 h end', async () => {
    const account = await createAccount(m, { credits: 100 });
    // Its attempt may have been charged by a version whose charges did not name their key: a take-over could charge it twice.
    await m.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status, created_at, claimed_at)
       VALUES ($1, 'pre-upgrade', $2, 'in_progress', $3::timestamptz - interval '1 hour', $3::timestamptz - interval '1 hour')`,
      [account.id, hashOf(TEST_NUMBERS.connected), m.clock.date()],
    );
    expect(await filter(m, account, 'pre-upgrade')).toMatchObject({ ok: false, code: 'IDEMPOTENCY_CONFLICT' });
    await advance(22 * 3600_000);
    expect(await filter(other, account, 'pre-upgrade')).toMatchObject({ ok: false, code: 'IDEMPOTENCY_CONFLICT' });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 100, byType: { TOPUP: 1 } });
    // Its life over, the key is a new call's.
    await advance(2 * 3600_000);
    expect(await filter(m, account, 'pre-upgrade')).toMatchObject({ ok: true, replayed: false });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 } });
  });

  it('keeps a keyed hash of the request, not its plain SHA-256 (which 10⁴ guesses from the masked number recover)', async () => {
    const account = await createAccount(m, { credits: 100 });
    bodyOf(await filter(m, account, 'keyed-1'));
    const [row] = await m.db.query(`SELECT request_hash FROM idempotency_keys WHERE account_id = $1`, [account.id]);
    expect(row.request_hash).not.toBe(hashOf(TEST_NUMBERS.connected));
    expect(row.request_hash).toBe(keyedHash(m.config.dataHashKey, JSON.stringify({ phone: TEST_NUMBERS.connected, source: 'internal' })));
  });

  it('a key answered before the upgrade (plain hash stored) is still replayed for its body, and refused for another', async () => {
    const account = await createAccount(m, { credits: 100 });
    const answer = '{"phone":"stored before the upgrade"}';
    await m.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status, response_status, response_body, completed_at, attempt, created_at)
       VALUES ($1, 'answered-pre-upgrade', $2, 'completed', 200, $3, now(), gen_random_uuid(), $4::timestamptz - interval '1 hour')`,
      [account.id, hashOf(TEST_NUMBERS.connected), answer, m.clock.date()],
    );
    expect(await filter(m, account, 'answered-pre-upgrade')).toEqual({ ok: true, body: answer, replayed: true });
    expect(await filter(m, account, 'answered-pre-upgrade', TEST_NUMBERS.absent)).toMatchObject({ ok: false, code: 'IDEMPOTENCY_CONFLICT' });
    expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 100, byType: { TOPUP: 1 } });
  });
});
