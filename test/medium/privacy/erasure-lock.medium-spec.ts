import type { QueryRunner } from 'typeorm';
import { AdminModule } from '../../../src/admin/admin.module';
import { ErasureService } from '../../../src/admin/erasure.service';
import { erasureHashes } from '../../../src/common/number-hash';
import { ERASURE_LOCK_ATTEMPT_MS, ERASURE_LOCK_DEADLINE_MS, numberWrites } from '../../../src/erasures/number-erasures';
import { LookupCacheEraser } from '../../../src/provider/lookup-cache-eraser';
import { advanceWhilePaused } from '../../helpers/clock-pauses';
import { settle } from '../../helpers/manual-clock';
import { testRedisUrl } from '../../helpers/redis';
import { Medium, startMedium } from '../medium';

/**
 * The erasure lock's fairness (docs/privacy.md, "Erasure"): while an erasure waits for the lock,
 * PostgreSQL queues every new writer's shared request behind it. The erasure waits
 * ERASURE_LOCK_ATTEMPT_MS at a time and pauses on the Clock between attempts, so writers get through;
 * it gives up with 503 after ERASURE_LOCK_DEADLINE_MS of the Clock, having erased nothing. The
 * writers are sessions holding the lock as every insert of a number does (numberWrites.guard).
 */
describe('the erasure lock: an erasure waiting for it never stalls the writers behind it', () => {
  let m: Medium;
  const sessions: QueryRunner[] = [];
  beforeAll(async () => {
    m = await startMedium({ imports: [AdminModule], env: { REDIS_URL: testRedisUrl() } });
  });
  afterEach(async () => {
    for (const session of sessions.splice(0)) {
      if (session.isTransactionActive) await session.rollbackTransaction();
      await session.release();
    }
  });
  afterAll(() => m?.close());

  const hashesOf = (e164: string) => erasureHashes(m.config.dataHashKey, e164);

  /** A writer's transaction, open, with the lock asked for (not awaited: it may wait) and its backend's pid. */
  async function writer(): Promise<{ session: QueryRunner; pid: number; guarded: Promise<void> }> {
    const session = m.db.createQueryRunner();
    sessions.push(session);
    await session.connect();
    const [{ pid }]: Array<{ pid: number }> = await session.query(`SELECT pg_backend_pid() AS pid`);
    await session.startTransaction();
    return { session, pid, guarded: numberWrites.guard(session) };
  }

  /** The erasure lock's requests of this database: who asks, in which mode, granted or not. */
  async function requests(): Promise<Array<{ pid: number; mode: string; granted: boolean }>> {
    return m.db.query(
      `SELECT l.pid, l.mode, l.granted FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND a.datname = current_database() ORDER BY l.pid`,
    );
  }

  async function until(holds: () => Promise<boolean>): Promise<void> {
    while (!(await holds())) await settle();
  }

  const erasureWaiting = async () => (await requests()).some((r) => r.mode === 'ExclusiveLock' && !r.granted);

  it('lets a writer that comes while it waits take the lock within one attempt, and erases once the holder commits', async () => {
    const e164 = '+447400190101';
    const holder = await writer();
    await holder.guarded;
    const pausesBefore = m.clock.waiting();
    let erased: object | undefined;
    const erasing = m
      .get(ErasureService)
      .erase(e164)
      .then((counts) => (erased = counts));
    await until(erasureWaiting);

    // Queued behind the waiting erasure, the newcomer is granted once the attempt gives up
    // (ERASURE_LOCK_ATTEMPT_MS), with the erasure pausing on the clock, which has not moved.
    const newcomer = await writer();
    await until(async () => (await requests()).some((r) => r.pid === newcomer.pid && r.granted));
    await newcomer.guarded;
    await until(async () => m.clock.waiting() > pausesBefore);
    expect((await requests()).filter((r) => r.mode === 'ExclusiveLock')).toEqual([]);
    await newcomer.session.commitTransaction();
    expect(erased).toBeUndefined();

    // Its next attempts wait for the holder again; once it commits, the erasure takes the lock.
    await m.clock.advance(ERASURE_LOCK_ATTEMPT_MS);
    await holder.session.commitTransaction();
    await advanceWhilePaused(m.clock, () => erased !== undefined, { stepMs: 1_000 });
    await erasing;
    expect(erased).toMatchObject({ bulk_entries_masked: 0 });
    expect(Number((await m.db.query(`SELECT count(*) AS n FROM number_erasures WHERE phone_hash = ANY($1::text[]) AND erased_at IS NOT NULL`, [hashesOf(e164)]))[0].n)).toBe(
      hashesOf(e164).length,
    );
  });

  it('answers 503 with Retry-After after its deadline on the clock, having erased nothing; run again, it erases', async () => {
    const e164 = '+447400190201';
    const holder = await writer();
    await holder.guarded;
    const forget = jest.spyOn(m.get(LookupCacheEraser), 'forget');
    let outcome: unknown;
    try {
      const erasing = m
        .get(ErasureService)
        .erase(e164)
        .then(
          (counts) => (outcome = counts),
          (error: unknown) => (outcome = error),
        );
      const waited = await advanceWhilePaused(m.clock, () => outcome !== undefined, { stepMs: 1_000 });
      await erasing;
      expect(waited).toBeGreaterThanOrEqual(ERASURE_LOCK_DEADLINE_MS - 1_000);
      expect(outcome).toMatchObject({ code: 'SERVICE_UNAVAILABLE', headers: { 'Retry-After': expect.stringMatching(/^\d+$/) } });
      expect((outcome as Error).message).toContain('nothing was erased');
      expect((outcome as Error).message).not.toContain('190201');
      expect(forget).not.toHaveBeenCalled();
      expect(Number((await m.db.query(`SELECT count(*) AS n FROM number_erasures WHERE phone_hash = ANY($1::text[])`, [hashesOf(e164)]))[0].n)).toBe(0);
    } finally {
      forget.mockRestore();
    }

    await holder.session.commitTransaction();
    await expect(m.get(ErasureService).erase(e164)).resolves.toMatchObject({ ledger_entries_masked: 0 });
  });
});
