import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { Clock } from '../common/clock';
import { AppError } from '../common/errors';

/**
 * Erasure wins every race (docs/privacy.md, "Erasure"). An erasure writes a tombstone for each keyed
 * hash of the number before it deletes anything, under the erasure lock taken exclusively; every
 * insert of a number-bearing row takes the same lock shared, first in its transaction, and then asks
 * `erasedSince` in the statement that writes. So either the insert commits before the tombstone does
 * (the erasure, which deletes after it, finds the row), or it sees the tombstone and writes nothing of
 * the number. One lock for every number: erasures are rare, and writers share it with each other.
 */
const LOCK = `hashtextextended('number-erasures', 0)`;
/** PostgreSQL's lock_not_available: a lock_timeout ran out. */
const LOCK_NOT_AVAILABLE = '55P03';

/** A writer's transaction older than this when it takes the lock is refused (503): it could have begun before a tombstone the retention run removed since. */
export const WRITER_MAX_AGE_MINUTES = 60;
/** How long a tombstone is kept after its erasure completed (or began, if it never did): many times the oldest writer. */
export const TOMBSTONE_HOURS = 24;

/**
 * How long one attempt of the erasure waits for the lock. While it waits, PostgreSQL queues every new
 * writer's shared request behind it: a short wait, given up and tried again, lets them through in
 * between, so a writer holding the lock long (a big bulk submission) never stalls the others for long.
 */
export const ERASURE_LOCK_ATTEMPT_MS = 100;
/** How long an erasure keeps trying for the lock before it answers 503, having erased nothing (docs/privacy.md). */
export const ERASURE_LOCK_DEADLINE_MS = 30_000;
/** The pause between two attempts: doubles from the first, up to the last. */
const ERASURE_LOCK_PAUSE_MS = { first: 50, last: 1_000 };

export const ERASURE_LOCK_TIMED_OUT = `Writes of numbers held the erasure lock for ${ERASURE_LOCK_DEADLINE_MS / 1000} seconds: nothing was erased. Please retry: running an erasure again is safe.`;

type Queryable = Pick<EntityManager, 'query'>;

/** One erasure's tombstones: the keyed hashes it marked, under its own id. */
export interface NumberErasure {
  id: string;
  hashes: string[];
}

/**
 * The writers' side. `guard` is the first statement of a writer's transaction (before any other lock,
 * so that a writer waiting for an erasure holds nothing another writer waits for).
 */
export const numberWrites = {
  async guard(transaction: Queryable): Promise<void> {
    const [{ fresh }]: Array<{ fresh: boolean }> = await transaction.query(
      `SELECT now() > clock_timestamp() - interval '${WRITER_MAX_AGE_MINUTES} minutes' AS fresh FROM (SELECT pg_advisory_xact_lock_shared(${LOCK})) AS locked`,
    );
    if (!fresh) throw new AppError('SERVICE_UNAVAILABLE', 'This request took too long to reach the database and was not written. Please retry.');
  },
  /** The database's time, for work that begins before its transaction (it read what it writes from elsewhere first): `erasedSince`'s `began`. */
  async began(db: Queryable): Promise<Date> {
    const [{ at }]: Array<{ at: Date }> = await db.query(`SELECT clock_timestamp() AS at`);
    return at;
  },
};

/**
 * SQL: whether the number whose keyed hash is `hashSql` (a qualified column or a parameter) is being
 * erased, or was erased after the writer's work began (`beganSql`: its transaction's start, or
 * `numberWrites.began`, taken before it left the database). Valid after `numberWrites.guard`.
 */
export function erasedSince(hashSql: string, beganSql = 'now()'): string {
  return `EXISTS (SELECT 1 FROM number_erasures tomb WHERE tomb.phone_hash = ${hashSql} AND (tomb.erased_at IS NULL OR tomb.erased_at >= ${beganSql}))`;
}

/** The erasure's side: its tombstones, and their retention. The database's clock on both sides of the rule. */
@Injectable()
export class NumberErasures {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly clock: Clock,
  ) {}

  /**
   * Before the erasure deletes anything: takes the lock once the writers holding it are done, then
   * marks the hashes as being erased, in rows of this erasure alone (another erasure of the number,
   * running beside it, has its own). What `complete` is given. Each attempt waits for the lock
   * ERASURE_LOCK_ATTEMPT_MS at most (writers get through between attempts); after
   * ERASURE_LOCK_DEADLINE_MS of the Clock's time, 503 with nothing written.
   */
  async begin(hashes: string[]): Promise<NumberErasure> {
    const id = randomUUID();
    const deadline = this.clock.now() + ERASURE_LOCK_DEADLINE_MS;
    for (let pause = ERASURE_LOCK_PAUSE_MS.first; ; pause = Math.min(2 * pause, ERASURE_LOCK_PAUSE_MS.last)) {
      try {
        await this.db.transaction(async (em) => {
          await em.query(`SET LOCAL lock_timeout = '${ERASURE_LOCK_ATTEMPT_MS}ms'`);
          await em.query(`SELECT pg_advisory_xact_lock(${LOCK})`);
          await em.query(`INSERT INTO number_erasures (phone_hash, erasure_id, started_at) SELECT unnest($1::text[]), $2, clock_timestamp()`, [hashes, id]);
        });
        return { id, hashes };
      } catch (error) {
        const { driverError, code } = error as { driverError?: { code?: string }; code?: string };
        if ((driverError?.code ?? code) !== LOCK_NOT_AVAILABLE) throw error;
      }
      if (this.clock.now() + pause > deadline) {
        throw new AppError('SERVICE_UNAVAILABLE', ERASURE_LOCK_TIMED_OUT, { 'Retry-After': String(ERASURE_LOCK_DEADLINE_MS / 1000) });
      }
      await this.clock.sleep(pause);
    }
  }

  /**
   * Once every store is erased: a write whose transaction begins from now on is new data, unless another
   * erasure of the number is still running (its rows stay open until it completes itself).
   */
  async complete(erasure: NumberErasure): Promise<void> {
    await this.db.query(`UPDATE number_erasures SET erased_at = clock_timestamp() WHERE phone_hash = ANY($1::text[]) AND erasure_id = $2 AND erased_at IS NULL`, [
      erasure.hashes,
      erasure.id,
    ]);
  }

  /** Retention, row by row: a batch of tombstones of erasures completed (or begun, if never completed) before `before`. */
  async deleteOlderThan(before: Date, limit: number): Promise<number> {
    const rows: Array<{ n: number }> = await this.db.query(
      `WITH gone AS (
         DELETE FROM number_erasures WHERE (phone_hash, erasure_id) IN (
           SELECT phone_hash, erasure_id FROM number_erasures WHERE COALESCE(erased_at, started_at) < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING 1)
       SELECT count(*)::int AS n FROM gone`,
      [before, limit],
    );
    return rows[0].n;
  }
}
