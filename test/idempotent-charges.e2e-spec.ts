import { createHash, randomUUID } from 'node:crypto';
import request from 'supertest';
import { keyedHash } from '../src/common/keyed-hash';
import { AbandonedChargesSweeper } from '../src/credits/abandoned-charges.sweeper';
import { CreditsService } from '../src/credits/credits.service';
import { createAccount, TestAccount } from './factories/accounts';
import { eventually } from './helpers/eventually';
import { expectError } from './helpers/expect-error';
import { ledgerState } from './helpers/ledger';
import { TEST_NUMBERS } from './helpers/numbers';
import { refuseUpdates } from './helpers/refuse-updates';
import { freePort, startServiceProcess } from './helpers/service-process';
import { startTestApp, TestApp } from './helpers/test-app';

/** The shortest sweep bound the configuration accepts for a 300 ms timeout without retries. */
const SWEEP_BOUND_SECONDS = 6;
const ENV = { PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '300', PROVIDER_RETRIES: '0', UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: String(SWEEP_BOUND_SECONDS) };
const hashOf = (phone: string) => createHash('sha256').update(JSON.stringify({ phone, source: 'internal' })).digest('hex');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The outage of issue 11: a call was charged and answered, then PostgreSQL refused to store its
 * answer. A trigger makes the database refuse it (for keys of this suite only), like a database that
 * died between the two statements.
 */
function refuseToStoreAnswers(t: TestApp, keyPrefix: string): Promise<() => Promise<void>> {
  return refuseUpdates(t, 'idempotency_keys', `NEW.status = 'completed' AND NEW.key LIKE '${keyPrefix}%'`);
}

describe('an Idempotency-Key is charged at most once, enforced by the ledger', () => {
  let t: TestApp;
  let other: TestApp;
  beforeAll(async () => {
    t = await startTestApp(ENV);
    other = await startTestApp(ENV);
  });
  afterAll(async () => {
    await other.close();
    await t.close();
  });

  const filter = (app: TestApp, account: TestAccount, key: string, phone: string = TEST_NUMBERS.connected) =>
    request(app.http).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', key).send({ phone });

  it('a key whose answer could not be stored: a retry after the sweep bound gets the answer again, not a second charge', async () => {
    const account = await createAccount(t, { credits: 100 });
    const allowStoring = await refuseToStoreAnswers(t, 'lost-answer-');
    let first: request.Response;
    try {
      first = await filter(t, account, 'lost-answer-1').expect(200);
      const [key] = await t.db.query(`SELECT status FROM idempotency_keys WHERE account_id = $1`, [account.id]);
      expect(key.status).toBe('in_progress');
      // Past the bound after which main handed an in-progress key out again; the sweep runs meanwhile.
      await sleep(SWEEP_BOUND_SECONDS * 1000 + 500);
      await t.app.get(AbandonedChargesSweeper).sweep();
      const retry = await filter(other, account, 'lost-answer-1').expect(200);
      expect((await ledgerState(t.db, account.id)).byType).toEqual({ TOPUP: 1, CHARGE: 1 }); // main charged it a second time here
      expect(retry.text).toBe(first.text);
      expect(retry.headers['idempotent-replayed']).toBe('true');
    } finally {
      await allowStoring();
    }
    const again = await filter(t, account, 'lost-answer-1').expect(200);
    expect(again.text).toBe(first.text);
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 96, ledgerSum: 96, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  }, 30_000);

  it('two retries at once on two instances after the answer was lost: both answered, one charge', async () => {
    const account = await createAccount(t, { credits: 100 });
    const allowStoring = await refuseToStoreAnswers(t, 'lost-twice-');
    let first: request.Response;
    try {
      first = await filter(t, account, 'lost-twice-1').expect(200);
    } finally {
      await allowStoring();
    }
    const retries = await Promise.all([filter(t, account, 'lost-twice-1'), filter(other, account, 'lost-twice-1')]);
    expect(retries.map((res) => res.status)).toEqual([200, 200]);
    for (const retry of retries) expect(JSON.parse(retry.text)).toEqual(JSON.parse(first.text));
    expect(retries[0].text).toBe(retries[1].text);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  });

  it('40 calls at once with one new key through two instances: one charge, every 200 the same bytes, the others 409', async () => {
    const account = await createAccount(t, { credits: 1000 });
    const phone = '+447400135791';
    const responses = await Promise.all(Array.from({ length: 40 }, (_, i) => filter(i % 2 ? t : other, account, 'burst-1', phone)));
    const answered = responses.filter((res) => res.status === 200);
    expect(answered.length).toBeGreaterThanOrEqual(1);
    for (const res of responses.filter((r) => r.status !== 200)) expectError(res, 409, 'IDEMPOTENCY_CONFLICT');
    expect(new Set(answered.map((res) => res.text)).size).toBe(1);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 996, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  });

  it('the database refuses a second charge for one key id, however the charges race, until a refund frees it', async () => {
    const account = await createAccount(t, { credits: 100 });
    const [{ id: keyId }] = await t.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status, attempt) VALUES ($1, 'raced', 'x', 'in_progress', gen_random_uuid()) RETURNING id`,
      [account.id],
    );
    const charge = (app: TestApp) =>
      app.app.get(CreditsService).charge(account.id, 4, { reference: `charge:${randomUUID()}`, phone: null, source: 'test', idempotencyKeyId: keyId });
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => charge(i % 2 ? t : other)));
    const written = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    expect(written).toHaveLength(1);
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject({ code: 'IDEMPOTENCY_CONFLICT' });

    const [first] = written as Array<PromiseFulfilledResult<{ id: string }>>;
    expect(await t.app.get(CreditsService).refund(first.value.id, 'test')).toBe(true);
    await expect(charge(other)).resolves.toMatchObject({ balanceAfter: 96 });
    expect(await ledgerState(t.db, account.id, { waitForSettlement: false })).toMatchObject({
      balance: 96,
      ledgerSum: 96,
      byType: { TOPUP: 1, CHARGE: 2, REFUND: 1 },
    });
  });

  it('a key whose attempt died before charging: once the bound has passed, of two retries at once on two instances one runs, the other gets 409 or its replay', async () => {
    const account = await createAccount(t, { credits: 100 });
    // What an instance killed between taking the key and charging leaves behind.
    await t.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status, created_at, claimed_at, attempt)
       VALUES ($1, 'died-early', $2, 'in_progress', now() - interval '1 hour', now() - make_interval(secs => $3), gen_random_uuid())`,
      [account.id, hashOf(TEST_NUMBERS.connected), SWEEP_BOUND_SECONDS + 1],
    );
    const retries = await Promise.all([filter(t, account, 'died-early'), filter(other, account, 'died-early')]);
    // One retry runs the call. The other either met it running (409) or, when the sandbox answered the
    // first before the second reached the key, gets its stored answer replayed: never a second run.
    const ran = retries.filter((res) => res.status === 200 && res.headers['idempotent-replayed'] === undefined);
    expect(ran).toHaveLength(1);
    const [second] = retries.filter((res) => res !== ran[0]);
    if (second.status === 409) expectError(second, 409, 'IDEMPOTENCY_CONFLICT');
    else {
      expect(second.status).toBe(200);
      expect(second.headers['idempotent-replayed']).toBe('true');
      expect(second.text).toBe(ran[0].text);
    }
    const [key] = await t.db.query(`SELECT status, created_at < now() - interval '59 minutes' AS kept_its_life FROM idempotency_keys WHERE account_id = $1`, [account.id]);
    expect(key).toEqual({ status: 'completed', kept_its_life: true });
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 }, unsettledCharges: 0 });
  });

  it('a key used again after its 24 h is a new call, charged again: its old charge stays in the ledger, no longer naming it', async () => {
    const account = await createAccount(t, { credits: 100 });
    const first = await filter(t, account, 'expires-1').expect(200);
    await t.db.query(`UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE account_id = $1`, [account.id]);
    const again = await filter(t, account, 'expires-1').expect(200);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(JSON.parse(again.text)).toEqual(JSON.parse(first.text));
    const charges = await t.db.query(
      `SELECT l.idempotency_key_id = k.id AS names_the_key FROM ledger_entries l LEFT JOIN idempotency_keys k ON k.account_id = l.account_id
        WHERE l.account_id = $1 AND l.type = 'CHARGE' ORDER BY l.id`,
      [account.id],
    );
    expect(charges).toEqual([{ names_the_key: null }, { names_the_key: true }]);
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 92, byType: { TOPUP: 1, CHARGE: 2 }, unsettledCharges: 0 });
  });

  it('a key stored in progress before attempts had tokens (before the upgrade) is never taken over: 409 until its 24 h end', async () => {
    const account = await createAccount(t, { credits: 100 });
    // Its attempt may have been charged by a version whose charges did not name their key: a take-over could charge it twice.
    await t.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status, created_at, claimed_at)
       VALUES ($1, 'pre-upgrade', $2, 'in_progress', now() - interval '1 hour', now() - interval '1 hour')`,
      [account.id, hashOf(TEST_NUMBERS.connected)],
    );
    expectError(await filter(t, account, 'pre-upgrade'), 409, 'IDEMPOTENCY_CONFLICT');
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100, byType: { TOPUP: 1 } });
  });

  it('keeps a keyed hash of the request, not its plain SHA-256 (which 10⁴ guesses from the masked number recover)', async () => {
    const account = await createAccount(t, { credits: 100 });
    await filter(t, account, 'keyed-1').expect(200);
    const [row] = await t.db.query(`SELECT request_hash FROM idempotency_keys WHERE account_id = $1`, [account.id]);
    expect(row.request_hash).not.toBe(hashOf(TEST_NUMBERS.connected));
    expect(row.request_hash).toBe(keyedHash(t.config.dataHashKey, JSON.stringify({ phone: TEST_NUMBERS.connected, source: 'internal' })));
  });

  it('a key answered before the upgrade (plain hash stored) is still replayed for its body, and refused for another', async () => {
    const account = await createAccount(t, { credits: 100 });
    const answer = '{"phone":"stored before the upgrade"}';
    await t.db.query(
      `INSERT INTO idempotency_keys (account_id, key, request_hash, status, response_status, response_body, completed_at, attempt, created_at)
       VALUES ($1, 'answered-pre-upgrade', $2, 'completed', 200, $3, now(), gen_random_uuid(), now() - interval '1 hour')`,
      [account.id, hashOf(TEST_NUMBERS.connected), answer],
    );
    const replayed = await filter(t, account, 'answered-pre-upgrade').expect(200);
    expect(replayed.text).toBe(answer);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expectError(await filter(t, account, 'answered-pre-upgrade', TEST_NUMBERS.absent), 409, 'IDEMPOTENCY_CONFLICT');
    expect(await ledgerState(t.db, account.id)).toMatchObject({ balance: 100, byType: { TOPUP: 1 } });
  });

  it('after a kill -9 mid-call, a retry gets 409 until the sweep refunds the charge, then runs again', async () => {
    const account = await createAccount(t, { credits: 100 });
    const port = await freePort();
    const dying = await startServiceProcess({ PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '4000', PROVIDER_RETRIES: '0', UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: '60' }, port);
    try {
      await dying.waitFor(/listening on/);
      const inFlight = request(dying.baseUrl).post('/api/v1/filter').set(account.auth).set('Idempotency-Key', 'killed-1').send({ phone: TEST_NUMBERS.slow }).catch(() => 'connection lost');
      await eventually(() => ledgerState(t.db, account.id, { waitForSettlement: false }), (state) => state.unsettledCharges === 1, 10_000);
      await dying.stop('SIGKILL');
      expect(await inFlight).toBe('connection lost');
    } finally {
      await dying.stop('SIGKILL');
    }
    expectError(await filter(t, account, 'killed-1', TEST_NUMBERS.slow), 409, 'IDEMPOTENCY_CONFLICT');
    // This suite's instances sweep charges older than 6 s: the dead call's charge is refunded, and the key freed with it.
    const refunded = await eventually(() => ledgerState(t.db, account.id, { waitForSettlement: false }), (state) => state.byType.REFUND === 1, 20_000);
    expect(refunded).toMatchObject({ balance: 100, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
    // The retry runs again (charged, and refunded as the slow number times out here too).
    expectError(await filter(t, account, 'killed-1', TEST_NUMBERS.slow), 503, 'PROVIDER_UNAVAILABLE');
    expect(await ledgerState(t.db, account.id)).toEqual({ balance: 100, ledgerSum: 100, byType: { TOPUP: 1, CHARGE: 2, REFUND: 2 }, unsettledCharges: 0 });
  }, 60_000);
});
