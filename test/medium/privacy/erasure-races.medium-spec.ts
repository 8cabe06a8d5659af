import type PgBoss from 'pg-boss';
import Redis from 'ioredis';
import { AdminModule } from '../../../src/admin/admin.module';
import { ErasureService } from '../../../src/admin/erasure.service';
import { BulkModule } from '../../../src/bulk/bulk.module';
import { BulkProcessor } from '../../../src/bulk/bulk.processor';
import { BulkQueue, ChunkTask } from '../../../src/bulk/bulk-queue';
import { BulkService } from '../../../src/bulk/bulk.service';
import { keyedHash } from '../../../src/common/keyed-hash';
import { CreditsService } from '../../../src/credits/credits.service';
import { IdempotencyService } from '../../../src/idempotency/idempotency.service';
import { LookupService } from '../../../src/provider/lookup.service';
import { SettingsService } from '../../../src/settings/settings.service';
import { WatchlistWorker } from '../../../src/watchlists/watchlist-worker';
import { WatchlistsModule } from '../../../src/watchlists/watchlists.module';
import { createAccount } from '../../factories/accounts';
import { ledgerState } from '../../helpers/ledger';
import { testRedisUrl } from '../../helpers/redis';
import { deferred, holdLookups } from '../lookups';
import { Medium, startMedium } from '../medium';
import { callerOf, watchlistsOf } from '../watchlists/watchlists';

/**
 * Issue 35 point 2: an erasure wins every race. A number erased while a watchlist round, a bulk chunk,
 * a live lookup or an Idempotency-Key's call holds it is refunded like a deletion, and nothing that
 * began before the erasure writes a trace of it back afterwards (the lookup cache in Redis and in
 * process, entries, answers). Each holder is stopped at a deferred promise the test releases after the
 * erasure has answered; no timer is waited for.
 */
describe('erasure during a round, a bulk chunk, a live lookup and a keyed call: nothing comes back, and what was charged for it is refunded', () => {
  let m: Medium;
  let redis: Redis;
  let work: jest.SpyInstance;
  beforeAll(async () => {
    work = jest.spyOn(BulkQueue.prototype, 'work').mockResolvedValue(undefined);
    m = await startMedium({
      imports: [WatchlistsModule, BulkModule, AdminModule],
      env: { PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '300', PROVIDER_RETRIES: '0', REDIS_URL: testRedisUrl(), BULK_CHUNK_SIZE: '10' },
    });
    redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    redis?.disconnect();
    await m?.close();
    work.mockRestore();
  });

  const erase = (e164: string) => m.get(ErasureService).erase(e164);
  const hashOf = (e164: string) => keyedHash(m.config.dataHashKey, e164);
  /** Every cache key of the number in Redis (any check, any version), and what this instance's tiers answer for it. */
  async function cachedTraces(e164: string): Promise<{ redisKeys: string[]; answered: string[] }> {
    const redisKeys = await redis.keys(`${m.config.cache.keyPrefix}*${hashOf(e164)}`);
    const answers = await m.get(LookupService).cachedAnswers(e164, ['network_status', 'line_type', 'portability']);
    return { redisKeys: redisKeys.filter((key) => !key.includes('erased:')), answered: Object.keys(answers) };
  }

  it('a live lookup whose upstream answers after the erasure caches nothing, in Redis or in process (finding 3)', async () => {
    const e164 = '+447400170101';
    const lookups = m.get(LookupService);
    const upstream = deferred();
    const asked = deferred();
    const ask = jest.spyOn(lookups as unknown as { ask: (...args: unknown[]) => Promise<unknown> }, 'ask');
    const real = Object.getPrototypeOf(lookups).ask as (...args: unknown[]) => Promise<unknown>;
    ask.mockImplementation(async (...args: unknown[]) => {
      asked.resolve();
      await upstream.promise;
      return real.apply(lookups, args);
    });
    try {
      const live = lookups.lookUp(e164, { network_status: true });
      await asked.promise;
      await erase(e164);
      upstream.resolve();
      await live;
    } finally {
      ask.mockRestore();
    }
    expect(await cachedTraces(e164)).toEqual({ redisKeys: [], answered: [] });
    // A lookup of the number begun after the erasure is answered (only not cached while the mark is held).
    await expect(lookups.lookUp(e164, { network_status: true })).resolves.toMatchObject({ validForPlan: true });
  });

  it('a watchlist round holding a number whose lookup fails when it is erased refunds it: balance back to 100 (finding 2)', async () => {
    const account = await createAccount(m, { credits: 100 });
    const failing = '+447400170003';
    const { id } = await watchlistsOf(m).create(account, { phones: [failing], interval: 'daily' });
    const held = holdLookups(m);
    let counts: object | undefined;
    try {
      expect(await m.jobs.run<string[]>(WatchlistWorker.JOB)).toEqual([id]);
      await held.startedAtLeast(1);
      expect(await ledgerState(m.db, account.id, { waitForSettlement: false })).toMatchObject({ balance: 96, byType: { TOPUP: 1, CHARGE: 1 } });
      counts = await erase(failing);
    } finally {
      held.release();
      held.restore();
    }
    await m.get(WatchlistWorker).idle();
    // The old erasure deleted the entry and the round's refund found no row: CHARGE -4 and no refund, balance 96.
    expect(await ledgerState(m.db, account.id)).toEqual({ balance: 100, ledgerSum: 100, byType: { TOPUP: 1, CHARGE: 1, REFUND: 1 }, unsettledCharges: 0 });
    expect(counts).toMatchObject({ watchlist_entries_deleted: 1, watchlist_charges_refunded: 1 });
    expect(await count(`watchlist_entries WHERE phone = $1`, [failing])).toBe(0);
    expect(await cachedTraces(failing)).toEqual({ redisKeys: [], answered: [] });
  });

  it('a watchlist round holding a number that answers after the erasure refunds it and writes no entry, change or cache entry back', async () => {
    const account = await createAccount(m, { credits: 100 });
    const answering = '+447400170105';
    const { id } = await watchlistsOf(m).create(account, { phones: [answering, '+447400170106'], interval: 'daily' });
    const held = holdLookups(m);
    try {
      expect(await m.jobs.run<string[]>(WatchlistWorker.JOB)).toEqual([id]);
      await held.startedAtLeast(2);
      await erase(answering);
    } finally {
      held.release();
      held.restore();
    }
    await m.get(WatchlistWorker).idle();
    // The other number was looked up and paid for; the erased one was never answered to anyone: refunded.
    expect(await ledgerState(m.db, account.id)).toEqual({ balance: 96, ledgerSum: 96, byType: { TOPUP: 1, CHARGE: 2, REFUND: 1 }, unsettledCharges: 0 });
    expect(await count(`watchlist_entries WHERE phone = $1`, [answering])).toBe(0);
    expect(await count(`watchlist_changes WHERE phone = $1`, [answering])).toBe(0);
    expect(await cachedTraces(answering)).toEqual({ redisKeys: [], answered: [] });
    expect((await cachedTraces('+447400170106')).redisKeys).not.toEqual([]);
  });

  it('a bulk chunk holding the number when it is erased answers it as failed, refunds it at the job’s end, and caches nothing', async () => {
    const account = await createAccount(m, { credits: 100 });
    const erased = '+447400170107';
    const { job } = await m.get(BulkService).submit(callerOf(account), { phones: [erased, '+447400170108'] });
    const queue = m.get(BulkQueue);
    const boss = (queue as unknown as { boss: PgBoss }).boss;
    const [task] = await boss.fetch<ChunkTask>(queue.chunkQueue);
    const held = holdLookups(m);
    let chunk: Promise<unknown> | undefined;
    let counts: object | undefined;
    try {
      chunk = m.get(BulkProcessor).processChunk(task.data);
      await held.startedAtLeast(1);
      counts = await erase(erased);
    } finally {
      held.release();
      held.restore();
    }
    await chunk;
    await boss.complete(queue.chunkQueue, task.id);
    const entries: Array<{ phone: string; error_code: string | null }> = await m.db.query(`SELECT phone, error_code FROM bulk_entries WHERE job_id = $1 ORDER BY idx`, [job.id]);
    expect(entries).toEqual([{ phone: '+44740017****', error_code: 'PROVIDER_UNAVAILABLE' }, { phone: '+447400170108', error_code: null }]);
    expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 96, ledgerSum: 96 });
    expect(counts).toMatchObject({ bulk_entries_masked: 1 });
    expect(await cachedTraces(erased)).toEqual({ redisKeys: [], answered: [] });
  });

  it('an Idempotency-Key call of the number that answers after the erasure keeps no answer under its key', async () => {
    const account = await createAccount(m, { credits: 100 });
    const e164 = '+447400170109';
    const answered = deferred();
    const started = deferred();
    const call = m.get(IdempotencyService).run(
      account.id,
      'erasure-race-key',
      { route: 'POST /api/v1/filter', body: { phone: e164 } },
      {
        charged: async () => {
          started.resolve();
          await answered.promise;
          return JSON.stringify({ phone: e164, valid: true });
        },
        rerunUncharged: () => Promise.reject(new Error('not rerun')),
      },
      null,
      e164,
    );
    await started.promise;
    expect(await erase(e164)).toMatchObject({ idempotency_keys_erased: 1 });
    answered.resolve();
    // The caller that was there gets its answer; nothing keeps it.
    expect((await call).body).toContain(e164);
    expect(await count(`idempotency_keys WHERE account_id = $1 AND response_body IS NOT NULL`, [account.id])).toBe(0);
  });

  /**
   * Issue 35 finding 4: a bulk job with `07400 170005` and full-width digits, then an erasure of
   * +447400170005, left both rows (the old match read E.164 and `00…` forms only); a national form
   * rejected by a watchlist's creation stayed in its creation answer and its Idempotency-Key's answer.
   */
  it('finds every stored form of the number: national, full-width, spaced, in bulk entries, a creation answer and a key’s answer', async () => {
    const account = await createAccount(m, { credits: 100 });
    const fullWidth = '\uFF10\uFF17\uFF14\uFF10\uFF10 \uFF11\uFF17\uFF10\uFF10\uFF10\uFF15';
    const { job } = await m.get(BulkService).submit(callerOf(account), { phones: ['07400 170005', fullWidth, '+44 7400 170005', '+447400170099'] });
    const created = await watchlistsOf(m).create(account, { phones: ['+447400170098', '07400 170005'], interval: 'daily' }, 'forms-key');
    expect(created.rejected).toEqual([expect.objectContaining({ phone: '07400 170005' })]);

    const counts = await erase('+447400170005');
    const phones: Array<{ phone: string }> = await m.db.query(`SELECT phone FROM bulk_entries WHERE job_id = $1 ORDER BY idx`, [job.id]);
    // A national form keeps its own shape, masked (review of 86ed38e, point 5: it was given the erased number's mask, with its country).
    expect(phones.map((row) => row.phone)).toEqual(['07400 17****', '07400 17****', '+44740017****', '+447400170099']);
    expect(await count(`watchlists WHERE id = $1 AND creation_answer IS NULL AND creation_answer_hashes IS NULL`, [created.id])).toBe(1);
    expect(await count(`idempotency_keys WHERE account_id = $1 AND key = 'forms-key' AND response_body IS NULL`, [account.id])).toBe(1);
    expect(counts).toMatchObject({ bulk_entries_masked: 3, idempotency_keys_erased: 1 });
  });

  /**
   * Review of 86ed38e, point 2: the refunds were made in the order the UPDATE returned the entries,
   * across accounts; two erasures side by side could each hold an account the other waits for (40P01,
   * a 500). Here the entries come back in the order they were written, the higher account id first.
   */
  it('refunds several accounts’ charges in account id order, then charge id (one lock order for every erasure)', async () => {
    // Rounds of the watchlists above that are due (a new watchlist's first) run first, unheld.
    while ((await m.jobs.run<string[]>(WatchlistWorker.JOB)).length > 0) await m.get(WatchlistWorker).idle();
    await m.get(WatchlistWorker).idle();
    const accounts = [await createAccount(m, { credits: 100 }), await createAccount(m, { credits: 100 })];
    const [low, high] = [...accounts].sort((a, b) => (a.id < b.id ? -1 : 1));
    const e164 = '+447400170112';
    const ids: string[] = [];
    for (const account of [high, low]) ids.push((await watchlistsOf(m).create(account, { phones: [e164], interval: 'daily' })).id);
    const held = holdLookups(m);
    const refunds = jest.spyOn(m.get(CreditsService), 'refundPart');
    let order: string[] = [];
    try {
      expect((await m.jobs.run<string[]>(WatchlistWorker.JOB)).sort()).toEqual([...ids].sort());
      await held.startedAtLeast(2);
      expect(await erase(e164)).toMatchObject({ watchlist_charges_refunded: 2 });
      order = refunds.mock.calls.map(([chargeId]) => chargeId);
    } finally {
      held.release();
      held.restore();
      refunds.mockRestore();
    }
    await m.get(WatchlistWorker).idle();
    const charges: Array<{ id: string }> = await m.db.query(
      `SELECT id::text FROM ledger_entries WHERE type = 'CHARGE' AND account_id = ANY($1::uuid[]) ORDER BY account_id, id`,
      [[low.id, high.id]],
    );
    expect(charges).toHaveLength(2);
    expect(order).toEqual(charges.map((row) => row.id));
    for (const account of [low, high]) expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 100, ledgerSum: 100 });
  });

  /**
   * Review of 86ed38e, point 1: `account_events.phone_hashes` had DEFAULT '{}', so an event an instance of
   * the version before writes during a rolling upgrade (it does not name the column) got '{}': neither the
   * hash match nor the legacy `IS NULL` match found it, and the erasure left the number in its body.
   */
  it('an event written by the version before (no phone_hashes named) is found and deleted by the erasure', async () => {
    const account = await createAccount(m, { credits: 100 });
    const e164 = '+447400170111';
    // The old instance's insert: the columns it knows, nothing else.
    await m.db.query(`INSERT INTO account_events (account_id, type, payload, dedupe_key) VALUES ($1, 'watchlist.changed', $2, 'old-instance-event')`, [
      account.id,
      JSON.stringify({ changes: [{ phone: e164, field: 'network_status' }] }),
    ]);
    expect(await count(`account_events WHERE account_id = $1 AND phone_hashes IS NULL`, [account.id])).toBe(1);
    expect(await erase(e164)).toMatchObject({ callback_events_deleted: 1 });
    expect(await count(`account_events WHERE account_id = $1`, [account.id])).toBe(0);
  });

  it('every writer of this version names the events’ hashes: a low-balance alert carries none ({}), not NULL (read by the legacy match)', async () => {
    const account = await createAccount(m, { credits: 8 });
    await m.get(SettingsService).update(account.id, { low_balance_threshold: 5 });
    await m.get(CreditsService).charge(account.id, 4, { reference: `charge:low-${account.id}`, phone: '+44740017****', source: 'erasure-test' });
    expect(await m.db.query(`SELECT type, phone_hashes FROM account_events WHERE account_id = $1`, [account.id])).toEqual([{ type: 'balance.low', phone_hashes: [] }]);
  });

  /**
   * Review of 86ed38e, points 4 and 5: digits without `+` were read as international (`612 345 678` as
   * +612345678, never found by an erasure of +34612345678), and a national form found was rewritten to
   * the erased number's mask (another country's, for a national form of one).
   */
  it('finds national forms by their national readings (Spain, the US, Russia, a bracketed trunk 0) and masks each in its own shape', async () => {
    const account = await createAccount(m, { credits: 100 });
    const forms = ['612 345 678', '(415) 555-2671', '8 912 345-67-89', '+44 (0) 7400 170113', '612 345 679'];
    const { job } = await m.get(BulkService).submit(callerOf(account), { phones: forms });
    for (const e164 of ['+34612345678', '+14155552671', '+79123456789', '+447400170113']) await erase(e164);
    const phones: Array<{ phone: string }> = await m.db.query(`SELECT phone FROM bulk_entries WHERE job_id = $1 ORDER BY idx`, [job.id]);
    expect(phones.map((row) => row.phone)).toEqual(['612 34* ***', '(415) 555-****', '8 912 345-**-**', '+44740017****', '612 345 679']);
  });

  async function count(from: string, parameters: unknown[]): Promise<number> {
    return Number((await m.db.query(`SELECT count(*) AS n FROM ${from}`, parameters))[0].n);
  }

  /** Not a race: the helper the tests above share is what it says (the scan would find a key written before the erasure). */
  it('cachedTraces finds a cached answer of a number not erased', async () => {
    const e164 = '+447400170110';
    await m.get(LookupService).lookUp(e164, { network_status: true });
    const traces = await cachedTraces(e164);
    expect(traces.redisKeys).toHaveLength(1);
    expect(traces.answered).toEqual(['network_status']);
  });
});
