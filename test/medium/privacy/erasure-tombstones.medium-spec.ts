import type PgBoss from 'pg-boss';
import { AdminModule } from '../../../src/admin/admin.module';
import { ErasureService } from '../../../src/admin/erasure.service';
import { BulkModule } from '../../../src/bulk/bulk.module';
import { BulkProcessor } from '../../../src/bulk/bulk.processor';
import { BulkQueue, ChunkTask } from '../../../src/bulk/bulk-queue';
import { BulkService } from '../../../src/bulk/bulk.service';
import { keyedHash } from '../../../src/common/keyed-hash';
import { erasureHashes } from '../../../src/common/number-hash';
import { CreditsService } from '../../../src/credits/credits.service';
import { numberWrites } from '../../../src/erasures/number-erasures';
import { IdempotencyService } from '../../../src/idempotency/idempotency.service';
import { RetentionModule } from '../../../src/privacy/retention.module';
import { RetentionScheduler } from '../../../src/privacy/retention.scheduler';
import { LookupCacheEraser } from '../../../src/provider/lookup-cache-eraser';
import { RedisCounterStore } from '../../../src/risk/counters/redis-counter-store';
import { RiskCounters } from '../../../src/risk/counters/risk-counters';
import { rangesOf } from '../../../src/risk/number-ranges';
import { RiskFeedbackRepository } from '../../../src/risk/risk-feedback.repository';
import { RiskRecords } from '../../../src/risk/risk-records';
import { RiskStoreModule } from '../../../src/risk/risk-store.module';
import { WatchlistsModule } from '../../../src/watchlists/watchlists.module';
import { WatchlistsRepository } from '../../../src/watchlists/watchlists.repository';
import { createAccount } from '../../factories/accounts';
import { ledgerState } from '../../helpers/ledger';
import { testRedisUrl } from '../../helpers/redis';
import { deferred } from '../lookups';
import { Medium, startMedium } from '../medium';
import { callerOf, watchlistsOf } from '../watchlists/watchlists';

/**
 * Issue 35 point 2, the inserts: a write that began before an erasure and commits after it brings no
 * trace of the number back (bulk entries, watchlist entries and creation answers, risk feedback rows,
 * Idempotency-Key claims). Each race is set up with deferred promises: the writer held inside its
 * transaction while the erasure runs (the erasure waits for it: it commits first and is erased), or the
 * erasure held before its last step while the writer runs (the writer sees the tombstone). No timer.
 */
describe('erasure tombstones: an insert that began before an erasure never lands the number after it', () => {
  let m: Medium;
  let work: jest.SpyInstance;
  beforeAll(async () => {
    work = jest.spyOn(BulkQueue.prototype, 'work').mockResolvedValue(undefined);
    m = await startMedium({
      imports: [WatchlistsModule, BulkModule, AdminModule, RiskStoreModule, RetentionModule],
      env: { PROVIDER: 'sandbox', PROVIDER_TIMEOUT_MS: '300', PROVIDER_RETRIES: '0', REDIS_URL: testRedisUrl(), BULK_CHUNK_SIZE: '10' },
    });
  });
  afterAll(async () => {
    await m?.close();
    work.mockRestore();
  });

  const erase = (e164: string) => m.get(ErasureService).erase(e164);
  const hashesOf = (e164: string) => erasureHashes(m.config.dataHashKey, e164);

  /** Resolves once a session of this database waits for the erasure lock (the erasure, behind a writer holding it shared). */
  async function erasureWaitsForWriters(): Promise<void> {
    for (;;) {
      const waiting: unknown[] = await m.db.query(
        `SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
          WHERE l.locktype = 'advisory' AND NOT l.granted AND l.mode = 'ExclusiveLock' AND a.datname = current_database()`,
      );
      if (waiting.length > 0) return;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  /** Holds the next call of `method` on `target` (after `reached` resolves) until `release()`. */
  function holdNext<T extends object>(target: T, method: keyof T & string): { reached: Promise<void>; release: () => void; restore: () => void } {
    const reached = deferred();
    const gate = deferred();
    const real = (target as Record<string, (...args: unknown[]) => Promise<unknown>>)[method];
    let held = false;
    const spy = jest.spyOn(target as Record<string, (...args: unknown[]) => Promise<unknown>>, method).mockImplementation(async function (this: unknown, ...args: unknown[]) {
      if (!held) {
        held = true;
        reached.resolve();
        await gate.promise;
      }
      return real.apply(this, args);
    });
    return { reached: reached.promise, release: () => gate.resolve(), restore: () => spy.mockRestore() };
  }

  /** Holds an erasure before its last step (the cache forgotten again), every store already erased: the tombstones are open. */
  function holdErasureAtItsEnd(): { reached: Promise<void>; release: () => void; restore: () => void } {
    const lookups = m.get(LookupCacheEraser);
    const real = lookups.forget.bind(lookups);
    const reached = deferred();
    const gate = deferred();
    let calls = 0;
    const spy = jest.spyOn(lookups, 'forget').mockImplementation(async (e164: string) => {
      calls += 1;
      if (calls === 2) {
        reached.resolve();
        await gate.promise;
      }
      return real(e164);
    });
    return { reached: reached.promise, release: () => gate.resolve(), restore: () => spy.mockRestore() };
  }

  /** Runs every chunk the queue holds, as the worker would: the jobs complete and settle their refunds. */
  async function runChunks(): Promise<void> {
    const queue = m.get(BulkQueue);
    const boss = (queue as unknown as { boss: PgBoss }).boss;
    for (;;) {
      const tasks = await boss.fetch<ChunkTask>(queue.chunkQueue, { batchSize: 10 });
      if (tasks.length === 0) return;
      for (const task of tasks) {
        await m.get(BulkProcessor).processChunk(task.data);
        await boss.complete(queue.chunkQueue, task.id);
      }
    }
  }

  async function count(from: string, parameters: unknown[]): Promise<number> {
    return Number((await m.db.query(`SELECT count(*) AS n FROM ${from}`, parameters))[0].n);
  }

  /** Bulk entries anywhere that still name the number: by a hash of it, or in a form whose digits end with its own. */
  const bulkTraces = (e164: string) => count(`bulk_entries WHERE phone_hash = ANY($1::text[]) OR regexp_replace(phone, '[^0-9]', '', 'g') LIKE '%' || $2`, [hashesOf(e164), e164.slice(-9)]);

  describe('a bulk submission', () => {
    it('holding the erasure lock in its transaction commits first, and the erasure masks and refunds its entries', async () => {
      const account = await createAccount(m, { credits: 100 });
      const e164 = '+447400180101';
      const held = holdNext(m.get(CreditsService), 'reserve');
      let counts: object | undefined;
      let submitted: Awaited<ReturnType<BulkService['submit']>> | undefined;
      try {
        const submitting = m.get(BulkService).submit(callerOf(account), { phones: [e164, '+447400180102', '07400 180101'] });
        await held.reached;
        const erasing = erase(e164);
        // The old code: the erasure answered here, before the entries were committed.
        await Promise.race([erasing, erasureWaitsForWriters()]);
        held.release();
        submitted = await submitting;
        counts = await erasing;
      } finally {
        held.release();
        held.restore();
      }
      expect(counts).toMatchObject({ bulk_entries_masked: 2 });
      const entries = await m.db.query(`SELECT phone, error_code FROM bulk_entries WHERE job_id = $1 ORDER BY idx`, [submitted!.job.id]);
      expect(entries).toEqual([
        { phone: '+44740018****', error_code: 'PROVIDER_UNAVAILABLE' },
        { phone: '+447400180102', error_code: null },
        { phone: '07400 18****', error_code: 'INVALID_REQUEST' },
      ]);
      await runChunks();
      expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 96, ledgerSum: 96, unsettledCharges: 0 });
      expect(await bulkTraces(e164)).toBe(0);
    });

    it('whose transaction began before the erasure and writes after it completed lands only masked entries, refunded', async () => {
      const account = await createAccount(m, { credits: 100 });
      const e164 = '+447400180111';
      const held = holdNext(numberWrites, 'guard');
      let submitted: Awaited<ReturnType<BulkService['submit']>> | undefined;
      try {
        const submitting = m.get(BulkService).submit(callerOf(account), { phones: [e164, '+447400180112'] });
        await held.reached;
        await erase(e164);
        held.release();
        submitted = await submitting;
      } finally {
        held.release();
        held.restore();
      }
      await runChunks();
      const entries = await m.db.query(`SELECT phone, error_code FROM bulk_entries WHERE job_id = $1 ORDER BY idx`, [submitted!.job.id]);
      expect(entries).toEqual([{ phone: '+44740018****', error_code: 'PROVIDER_UNAVAILABLE' }, { phone: '+447400180112', error_code: null }]);
      expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 96, ledgerSum: 96, unsettledCharges: 0 });
      expect(await bulkTraces(e164)).toBe(0);
    });

    it('submitted while an erasure runs (after its bulk step) lands only masked entries, refunded; one submitted after it is new data', async () => {
      const account = await createAccount(m, { credits: 100 });
      const e164 = '+447400180121';
      const held = holdErasureAtItsEnd();
      let submitted: Awaited<ReturnType<BulkService['submit']>> | undefined;
      try {
        const erasing = erase(e164);
        await held.reached;
        submitted = await m.get(BulkService).submit(callerOf(account), { phones: [e164, '+44 7400 180121'] });
        held.release();
        await erasing;
      } finally {
        held.release();
        held.restore();
      }
      await runChunks();
      const entries = await m.db.query(`SELECT phone, error_code FROM bulk_entries WHERE job_id = $1 ORDER BY idx`, [submitted!.job.id]);
      expect(entries).toEqual([
        { phone: '+44740018****', error_code: 'PROVIDER_UNAVAILABLE' },
        { phone: '+44740018****', error_code: 'PROVIDER_UNAVAILABLE' },
      ]);
      expect(await ledgerState(m.db, account.id)).toMatchObject({ balance: 100, ledgerSum: 100, unsettledCharges: 0 });
      expect(await bulkTraces(e164)).toBe(0);

      const later = await m.get(BulkService).submit(callerOf(account), { phones: [e164] });
      expect(await m.db.query(`SELECT phone, error_code FROM bulk_entries WHERE job_id = $1`, [later.job.id])).toEqual([{ phone: e164, error_code: null }]);
    });
  });

  describe('a watchlist', () => {
    it('created while holding the erasure lock commits first, and the erasure deletes its entry and clears its answer', async () => {
      const account = await createAccount(m, { credits: 100 });
      const e164 = '+447400180201';
      const held = holdNext(m.get(WatchlistsRepository) as unknown as { findIn: () => Promise<unknown> }, 'findIn');
      let created: { id: string } | undefined;
      try {
        const creating = watchlistsOf(m).create(account, { phones: [e164, '+447400180202', '07400 180201'], interval: 'daily' });
        await held.reached;
        const erasing = erase(e164);
        await Promise.race([erasing, erasureWaitsForWriters()]);
        held.release();
        created = await creating;
        await erasing;
      } finally {
        held.release();
        held.restore();
      }
      expect(await count(`watchlist_entries WHERE phone = $1`, [e164])).toBe(0);
      expect(await count(`watchlists WHERE id = $1 AND creation_answer IS NULL`, [created!.id])).toBe(1);
      expect(await m.db.query(`SELECT phone FROM watchlist_entries WHERE watchlist_id = $1`, [created!.id])).toEqual([{ phone: '+447400180202' }]);
    });

    it('created while an erasure runs does not watch the number nor echo its national form, in its answer or its stored one', async () => {
      const account = await createAccount(m, { credits: 100 });
      const e164 = '+447400180211';
      const held = holdErasureAtItsEnd();
      let created: Awaited<ReturnType<ReturnType<typeof watchlistsOf>['create']>> | undefined;
      try {
        const erasing = erase(e164);
        await held.reached;
        created = await watchlistsOf(m).create(account, { phones: [e164, '+447400180212', '07400 180211', 'nonsense'], interval: 'daily' }, 'tomb-create-key');
        held.release();
        await erasing;
      } finally {
        held.release();
        held.restore();
      }
      expect(created).toMatchObject({ total: 1, rejected: [expect.objectContaining({ phone: 'nonsense' })] });
      expect(JSON.stringify(created)).not.toContain('180211');
      expect(await m.db.query(`SELECT phone FROM watchlist_entries WHERE watchlist_id = $1`, [created!.id])).toEqual([{ phone: '+447400180212' }]);
      expect(await count(`watchlists WHERE id = $1 AND (creation_answer LIKE '%180211%' OR creation_answer_hashes && $2::text[])`, [created!.id, hashesOf(e164)])).toBe(0);
      expect(await count(`idempotency_keys WHERE account_id = $1 AND response_body LIKE '%180211%'`, [account.id])).toBe(0);
    });

    it('added to while holding the erasure lock commits first and loses the entry to the erasure; added to during one skips it', async () => {
      const account = await createAccount(m, { credits: 100 });
      const [first, second] = ['+447400180221', '+447400180222'];
      const { id } = await watchlistsOf(m).create(account, { phones: ['+447400180220'], interval: 'daily' });
      const held = holdNext(m.get(WatchlistsRepository) as unknown as { checkLimit: () => Promise<unknown> }, 'checkLimit');
      try {
        const adding = watchlistsOf(m).update(account, id, { add: [first] });
        await held.reached;
        const erasing = erase(first);
        await Promise.race([erasing, erasureWaitsForWriters()]);
        held.release();
        await adding;
        await erasing;
      } finally {
        held.release();
        held.restore();
      }
      expect(await count(`watchlist_entries WHERE phone = $1`, [first])).toBe(0);

      const erasure = holdErasureAtItsEnd();
      try {
        const erasing = erase(second);
        await erasure.reached;
        await watchlistsOf(m).update(account, id, { add: [second, '+447400180223'] });
        erasure.release();
        await erasing;
      } finally {
        erasure.release();
        erasure.restore();
      }
      expect(await m.db.query(`SELECT phone FROM watchlist_entries WHERE watchlist_id = $1 ORDER BY phone`, [id])).toEqual([{ phone: '+447400180220' }, { phone: '+447400180223' }]);
    });
  });

  describe('risk feedback', () => {
    const ask = (accountId: string, e164: string) =>
      m.get(RiskCounters).observe({ accountId, source: 'web', e164, ranges: rangesOf(e164), country: 'GB', ip: null, at: m.clock.now(), graceSeconds: 600 });
    const feedbackRows = (e164: string) => count(`risk_feedback WHERE phone_hash = ANY($1::text[])`, [hashesOf(e164)]);

    it('whose ask was read before the erasure and whose row is written after it is not recorded', async () => {
      const account = await createAccount(m, { credits: 100 });
      const e164 = '+447400180301';
      await ask(account.id, e164);
      const held = holdNext(m.get(RiskFeedbackRepository), 'record');
      let recorded: boolean | undefined;
      try {
        const giving = m.get(RiskRecords).feedback(account.id, e164, true);
        await held.reached;
        await erase(e164);
        held.release();
        recorded = await giving;
      } finally {
        held.release();
        held.restore();
      }
      expect(recorded).toBe(false);
      expect(await feedbackRows(e164)).toBe(0);
    });

    it('given after the erasure completed, on a new ask, is recorded as any other', async () => {
      const account = await createAccount(m, { credits: 100 });
      const e164 = '+447400180311';
      await ask(account.id, e164);
      await erase(e164);
      expect(await m.get(RiskRecords).feedback(account.id, e164, true)).toBe(false);
      // The counters' erasure mark (an hour, by Redis's own time) stops asks of the number from being
      // counted; gone here as it would be an hour later.
      await (m.get(RiskCounters).store as RedisCounterStore).client.del(`erased:${keyedHash(m.config.dataHashKey, e164).slice(0, 16)}`);
      await ask(account.id, e164);
      expect(await m.get(RiskRecords).feedback(account.id, e164, true)).toBe(true);
      expect(await feedbackRows(e164)).toBe(1);
    });
  });

  describe('an Idempotency-Key call', () => {
    const call = (accountId: string, key: string, e164: string, answered: Promise<void> = Promise.resolve()) =>
      m.get(IdempotencyService).run(
        accountId,
        key,
        { route: 'POST /api/v1/filter', body: { phone: e164 } },
        {
          charged: async () => {
            await answered;
            return JSON.stringify({ phone: e164, valid: true });
          },
          rerunUncharged: () => Promise.reject(new Error('not rerun')),
        },
        null,
        e164,
      );

    it('whose claim waits in its transaction while the erasure begins commits first, and the erasure scrubs its key', async () => {
      const account = await createAccount(m, { credits: 100 });
      const e164 = '+447400180401';
      // Another session holds the key's row uncommitted: the claim waits on it, inside its transaction.
      const blocker = m.db.createQueryRunner();
      await blocker.connect();
      await blocker.startTransaction();
      let body: string | undefined;
      try {
        await blocker.query(
          `INSERT INTO idempotency_keys (account_id, key, request_hash, status, created_at, claimed_at) VALUES ($1, 'tomb-claim', 'x', 'in_progress', now(), now())`,
          [account.id],
        );
        const calling = call(account.id, 'tomb-claim', e164);
        for (;;) {
          const waiting: unknown[] = await m.db.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'transactionid'`);
          if (waiting.length > 0) break;
          await new Promise((resolve) => setImmediate(resolve));
        }
        const erasing = erase(e164);
        await Promise.race([erasing, erasureWaitsForWriters()]);
        await blocker.rollbackTransaction();
        body = (await calling).body;
        await erasing;
      } finally {
        if (blocker.isTransactionActive) await blocker.rollbackTransaction();
        await blocker.release();
      }
      // The caller that was there gets its answer; nothing keeps it, nor the number's hash.
      expect(body).toContain(e164);
      expect(await count(`idempotency_keys WHERE account_id = $1 AND (response_body IS NOT NULL OR phone_hash IS NOT NULL)`, [account.id])).toBe(0);
    });

    it('claimed while an erasure runs keeps neither the number’s hash nor its answer, and a retry is refused', async () => {
      const account = await createAccount(m, { credits: 100 });
      const e164 = '+447400180411';
      const held = holdErasureAtItsEnd();
      let body: string | undefined;
      try {
        const erasing = erase(e164);
        await held.reached;
        body = (await call(account.id, 'tomb-during', e164)).body;
        held.release();
        await erasing;
      } finally {
        held.release();
        held.restore();
      }
      expect(body).toContain(e164);
      expect(await count(`idempotency_keys WHERE account_id = $1 AND (response_body IS NOT NULL OR phone_hash IS NOT NULL)`, [account.id])).toBe(0);
      await expect(call(account.id, 'tomb-during', e164)).rejects.toMatchObject({ code: 'IDEMPOTENCY_CONFLICT' });
      // After the erasure, a new key of the number is kept as any other.
      expect((await call(account.id, 'tomb-after', e164)).body).toContain(e164);
      expect(await count(`idempotency_keys WHERE account_id = $1 AND key = 'tomb-after' AND response_body IS NOT NULL`, [account.id])).toBe(1);
    });
  });

  it('a second erasure of the number, begun before the first completed, keeps the number refused until it completes itself', async () => {
    const account = await createAccount(m, { credits: 100 });
    const e164 = '+447400180601';
    // Each erasure forgets the cache twice: the 2nd call is the first erasure's last step, the 4th the second's.
    const lookups = m.get(LookupCacheEraser);
    const real = lookups.forget.bind(lookups);
    const gates = new Map([2, 4].map((call) => [call, { reached: deferred(), gate: deferred() }]));
    let calls = 0;
    const spy = jest.spyOn(lookups, 'forget').mockImplementation(async (number: string) => {
      const held = gates.get((calls += 1));
      if (held) {
        held.reached.resolve();
        await held.gate.promise;
      }
      return real(number);
    });
    const [first, second] = [gates.get(2)!, gates.get(4)!];
    let submitted: Awaited<ReturnType<BulkService['submit']>> | undefined;
    try {
      const erasingFirst = erase(e164);
      await first.reached.promise;
      const erasingSecond = erase(e164);
      await second.reached.promise;
      // The first completes while the second has not.
      first.gate.resolve();
      await erasingFirst;
      submitted = await m.get(BulkService).submit(callerOf(account), { phones: [e164] });
      second.gate.resolve();
      await erasingSecond;
    } finally {
      for (const { gate } of gates.values()) gate.resolve();
      spy.mockRestore();
    }
    await runChunks();
    expect(await m.db.query(`SELECT phone, error_code FROM bulk_entries WHERE job_id = $1`, [submitted!.job.id])).toEqual([
      { phone: '+44740018****', error_code: 'PROVIDER_UNAVAILABLE' },
    ]);
    expect(await bulkTraces(e164)).toBe(0);
    expect(await count(`number_erasures WHERE phone_hash = ANY($1::text[]) AND erased_at IS NOT NULL`, [hashesOf(e164)])).toBe(2 * hashesOf(e164).length);
  });

  it('keeps a tombstone while the retention period runs, a day past its erasure, then lets it go', async () => {
    const e164 = '+447400180501';
    await erase(e164);
    const tombstones = () => count(`number_erasures WHERE phone_hash = ANY($1::text[]) AND erased_at IS NOT NULL`, [hashesOf(e164)]);
    expect(await tombstones()).toBe(hashesOf(e164).length);
    await m.clock.advance(23 * 3600_000);
    await m.jobs.run(RetentionScheduler.JOB);
    expect(await tombstones()).toBe(hashesOf(e164).length);
    await m.clock.advance(2 * 3600_000);
    await m.jobs.run(RetentionScheduler.JOB);
    expect(await tombstones()).toBe(0);
  });
});
