import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { Clock } from '../common/clock';
import { joinedTransaction, TransactionHost, type TypeOrmTx } from '../database/transactions';
import type { EnabledChecks } from '../checks/checks';
import type { ChargeRefusal } from '../credits/credits.repository';
import type { ReportedAnswer } from '../checks/phone-answer.dto';
import type { StoredProvenance } from '../checks/provenance';
import type { PausedStatus } from './watchlist-rows';
import { AnswerWithChecks, FieldChange, nextCheckAt, WatchInterval } from './watch-rules';

/** A watchlist whose lease this instance holds: a round to start (not running) or to resume. */
export interface ClaimedWatchlist {
  id: string;
  accountId: string;
  interval: WatchInterval;
  round: number;
  running: boolean;
  /** This claim's id: every write of the round requires the lease to still be held by it. */
  leaseOwner: string;
  checks: EnabledChecks | null;
  cost: number | null;
}

export interface PendingEntry {
  id: string;
  phone: string;
  /** The last answer and the checks that produced it (checks null for answers stored before they were kept). */
  last: AnswerWithChecks | null;
  /** The round's charge, when the entry is already charged for it. */
  chargeId: string | null;
}

/** A change found by a round, with the origin (provider, observation time) of the new answer of the field's check. */
export type FoundChange = FieldChange & { answeredBy: StoredProvenance[string] | null };

export interface RoundOutcome {
  /** Each answer with which provider answered each check and when (null when none was asked), and the changes it made. */
  answered: Array<{ id: string; result: ReportedAnswer; answeredBy: StoredProvenance | null; changes: FoundChange[] }>;
  failed: string[];
}

/**
 * The workers' side of watchlists. The watchlists table is the due-time table: a round is claimed by
 * a lease taken with `FOR UPDATE SKIP LOCKED`, so one instance works it at a time; each entry's
 * charged_round and checked_round make every step of a resumed round skip what is done. Every time a
 * rule compares or writes (a lease, a due time, a round's start and end) is the Clock's (docs/development.md).
 */
@Injectable()
export class RoundsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly txHost: TransactionHost<TypeOrmTx>,
    private readonly clock: Clock,
  ) {}

  /** A watchlist of the group with a round due, left running without a live lease, or paused by a cap whose day is over: leased here (active). */
  async claimDue(group: string, leaseSeconds: number): Promise<ClaimedWatchlist | undefined> {
    const [rows]: [Array<Record<string, unknown>>] = await this.db.query(
      `UPDATE watchlists SET lease_until = $3::timestamptz + make_interval(secs => $2), lease_owner = gen_random_uuid(), status = 'active'
        WHERE id = (SELECT id FROM watchlists
                     WHERE schedule_group = $1 AND (lease_until IS NULL OR lease_until < $3)
                       AND ((status = 'active' AND (round_running OR next_check_at <= $3))
                            -- The day of the daily cap that paused it is over: it resumes by itself.
                            OR (status = 'paused_spending_limit' AND next_check_at <= $3))
                     ORDER BY next_check_at FOR UPDATE SKIP LOCKED LIMIT 1)
        RETURNING id, account_id, interval, round, round_running, lease_owner, round_checks, round_cost`,
      [group, leaseSeconds, this.clock.date()],
    );
    const row = rows[0];
    return (
      row && {
        id: row.id as string,
        accountId: row.account_id as string,
        interval: row.interval as WatchInterval,
        round: Number(row.round),
        running: row.round_running as boolean,
        leaseOwner: row.lease_owner as string,
        checks: row.round_checks as EnabledChecks | null,
        cost: row.round_cost === null ? null : Number(row.round_cost),
      }
    );
  }

  /** Numbers a round started now would check. */
  async watchedCount(watchlistId: string): Promise<number> {
    const [{ count }] = await this.db.query(`SELECT count(*) FROM watchlist_entries WHERE watchlist_id = $1 AND removed_at IS NULL`, [watchlistId]);
    return Number(count);
  }

  /**
   * Starts the next round with the checks and price of now (fixed for the whole round). Undefined when
   * a round is already running or the watchlist is not active: a round is never started twice.
   */
  async startRound(
    watchlistId: string,
    checks: EnabledChecks,
    cost: number,
    trigger: 'schedule' | 'manual',
    leaseOwner: string | null = null,
  ): Promise<number | undefined> {
    return this.db.transaction(async (em) => {
      const [rows]: [Array<{ round: number }>] = await em.query(
        `UPDATE watchlists SET round = round + 1, round_running = true, round_checks = $2, round_cost = $3
          WHERE id = $1 AND NOT round_running AND status = 'active' AND ($4::uuid IS NULL OR lease_owner = $4) RETURNING round`,
        [watchlistId, JSON.stringify(checks), cost, leaseOwner],
      );
      if (!rows[0]) return undefined;
      await em.query(`INSERT INTO watchlist_rounds (watchlist_id, round, trigger, cost_per_number, started_at) VALUES ($1, $2, $3, $4, $5)`, [
        watchlistId, rows[0].round, trigger, cost, this.clock.date(),
      ]);
      return Number(rows[0].round);
    });
  }

  /** Keeps the lease while the round runs; false when the round must stop here (paused, deleted, taken over). */
  async renewLease(watchlistId: string, round: number, leaseOwner: string, leaseSeconds: number): Promise<boolean> {
    const [rows]: [unknown[]] = await this.db.query(
      `UPDATE watchlists SET lease_until = $5::timestamptz + make_interval(secs => $4)
        WHERE id = $1 AND round = $2 AND round_running AND status = 'active' AND lease_owner = $3 AND lease_until > $5 RETURNING 1`,
      [watchlistId, round, leaseOwner, leaseSeconds, this.clock.date()],
    );
    return rows.length > 0;
  }

  /** Hands the watchlist back at once (shutdown, pause): another instance may resume it without waiting. */
  async releaseLease(watchlistId: string, leaseOwner: string): Promise<void> {
    await this.db.query(`UPDATE watchlists SET lease_until = NULL, lease_owner = NULL WHERE id = $1 AND lease_owner = $2`, [watchlistId, leaseOwner]);
  }

  /** A round that cannot run (no check enabled) is skipped to the next due time. */
  async skipRound(watchlistId: string, leaseOwner: string, next: Date): Promise<void> {
    await this.db.query(
      `UPDATE watchlists SET lease_until = NULL, lease_owner = NULL, next_check_at = $3 WHERE id = $1 AND lease_owner = $2 AND NOT round_running`,
      [watchlistId, leaseOwner, next],
    );
  }

  /**
   * The next entries of the round not yet checked, after `afterId` in id order (those removed meanwhile
   * only when already charged).
   */
  async pendingEntries(watchlistId: string, round: number, afterId: string, limit: number): Promise<PendingEntry[]> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      `SELECT id, phone, last_result, last_checks, charged_round, charge_id FROM watchlist_entries
        WHERE watchlist_id = $1 AND id > $3 AND checked_round < $2 AND (removed_at IS NULL OR charged_round = $2)
        ORDER BY id LIMIT $4`,
      [watchlistId, round, afterId, limit],
    );
    return rows.map((row) => ({
      id: String(row.id),
      phone: row.phone as string,
      last: row.last_result ? { result: row.last_result as ReportedAnswer, checks: row.last_checks as EnabledChecks | null } : null,
      chargeId: Number(row.charged_round) === round ? String(row.charge_id) : null,
    }));
  }

  /**
   * In the transaction RoundRunner opened to charge them: holds the lease and locks the entries not
   * yet charged for the round (entries locked or charged meanwhile are skipped).
   */
  async lockUncharged(lease: RoundLease, entryIds: string[]): Promise<Array<{ id: string; phone: string }>> {
    const em = joinedTransaction(this.txHost);
    await holdLease(em, lease, this.clock.date());
    return em.query(
      `SELECT id::text, phone FROM watchlist_entries WHERE id = ANY($1::bigint[]) AND charged_round < $2 ORDER BY id FOR UPDATE SKIP LOCKED`,
      [entryIds, lease.round],
    );
  }

  /** In the same transaction as their charges: the entries charged for the round, with the charge of each. */
  async markCharged(round: number, charged: Map<string, string>): Promise<void> {
    if (charged.size === 0) return;
    await joinedTransaction(this.txHost).query(
      `UPDATE watchlist_entries e SET charged_round = $1, charge_id = c.charge_id
         FROM unnest($2::bigint[], $3::bigint[]) AS c(id, charge_id) WHERE e.id = c.id`,
      [round, [...charged.keys()], [...charged.values()]],
    );
  }

  /**
   * Writes a chunk's answers, their changes, and the failures, once: only entries not yet checked in
   * the round are written, and only theirs count. Runs in the transaction RoundRunner opened, which
   * refunds the failures' charges (returned) in it.
   */
  async recordOutcome(lease: RoundLease, checks: EnabledChecks, outcome: RoundOutcome): Promise<string[]> {
    const { watchlistId, round } = lease;
    const em = joinedTransaction(this.txHost);
    {
      await holdLease(em, lease, this.clock.date());
      const [written]: [Array<{ id: string; phone: string }>] = await em.query(
        `UPDATE watchlist_entries e SET last_result = a.result, last_answered_by = a.answered_by, last_checks = $4, last_error = NULL,
                checked_round = $1, checked_at = $6
           FROM unnest($2::bigint[], $3::jsonb[], $5::json[]) AS a(id, result, answered_by)
          WHERE e.id = a.id AND e.checked_round < $1 RETURNING e.id::text, e.phone`,
        [
          round,
          outcome.answered.map((a) => a.id),
          outcome.answered.map((a) => JSON.stringify(a.result)),
          JSON.stringify(checks),
          outcome.answered.map((a) => (a.answeredBy ? JSON.stringify(a.answeredBy) : null)),
          this.clock.date(),
        ],
      );
      const phones = new Map(written.map((row) => [row.id, row.phone]));
      const changes = outcome.answered.filter((a) => phones.has(a.id)).flatMap((a) => a.changes.map((c) => ({ ...c, id: a.id, phone: phones.get(a.id)! })));
      if (changes.length > 0) {
        await em.query(
          `INSERT INTO watchlist_changes (watchlist_id, entry_id, round, phone, field, before, after, answered_by)
           SELECT $1, c.entry_id, $2, c.phone, c.field, c.before, c.after, c.answered_by
             FROM unnest($3::bigint[], $4::text[], $5::text[], $6::jsonb[], $7::jsonb[], $8::json[]) AS c(entry_id, phone, field, before, after, answered_by)
           ON CONFLICT (entry_id, round, field) DO NOTHING`,
          [watchlistId, round, changes.map((c) => c.id), changes.map((c) => c.phone), changes.map((c) => c.field),
            changes.map((c) => JSON.stringify(c.before)), changes.map((c) => JSON.stringify(c.after)),
            changes.map((c) => (c.answeredBy ? JSON.stringify(c.answeredBy) : null))],
        );
      }
      const [failed]: [Array<{ charge_id: string }>] = await em.query(
        `UPDATE watchlist_entries SET last_error = 'PROVIDER_UNAVAILABLE', checked_round = $1, checked_at = $3
          WHERE id = ANY($2::bigint[]) AND checked_round < $1 RETURNING charge_id::text`,
        [round, outcome.failed, this.clock.date()],
      );
      await em.query(
        `UPDATE watchlist_rounds SET checked = checked + $3, failed = failed + $4, changes = changes + $5 WHERE watchlist_id = $1 AND round = $2`,
        [watchlistId, round, written.length, failed.length, changes.length],
      );
      return failed.map((row) => row.charge_id);
    }
  }

  /**
   * Ends the round: the watchlist is due again an interval after the round started. Answers its
   * callback_url and number of changes (RoundRunner records the `watchlist.changes` callback in the
   * same transaction), or undefined when the round was not this claim's to end.
   */
  async finishRound(lease: RoundLease, interval: WatchInterval): Promise<{ callbackUrl: string | null; changes: number } | undefined> {
    const { watchlistId, round } = lease;
    const em = joinedTransaction(this.txHost);
    {
      const now = this.clock.date();
      if (!(await holdLease(em, lease, now, false))) return undefined;
      const [rounds]: [Array<{ changes: number; started_at: Date }>] = await em.query(
        `UPDATE watchlist_rounds SET completed_at = $3 WHERE watchlist_id = $1 AND round = $2 AND completed_at IS NULL
         RETURNING changes, started_at`,
        [watchlistId, round, now],
      );
      if (!rounds[0]) return undefined;
      const next = new Date(Math.max(now.getTime(), nextCheckAt(rounds[0].started_at, interval).getTime()));
      const [lists]: [Array<{ callback_url: string | null }>] = await em.query(
        `UPDATE watchlists SET round_running = false, lease_until = NULL, lease_owner = NULL, next_check_at = $3
          WHERE id = $1 AND round = $2 AND round_running RETURNING callback_url`,
        [watchlistId, round, next],
      );
      return lists[0] && { callbackUrl: lists[0].callback_url, changes: Number(rounds[0].changes) };
    }
  }

  /**
   * The round (or its rest) was refused: the watchlist pauses and says so by callback, never retrying in
   * a loop. Balance: `paused_insufficient_credits` until PATCH {"paused": false}. Daily cap:
   * `paused_spending_limit` until the next 00:00 UTC by the Clock (`claimDue` resumes it) or that PATCH. Answers
   * the pause (RoundRunner records its `watchlist.paused` callback in the same transaction), or
   * undefined when the watchlist was no longer this claim's.
   */
  async pauseRefused(
    watchlistId: string,
    leaseOwner: string,
    refusedBy: ChargeRefusal,
  ): Promise<{ callbackUrl: string | null; seq: number; status: PausedStatus } | undefined> {
    const status: PausedStatus = refusedBy === 'spending_limit' ? 'paused_spending_limit' : 'paused_insufficient_credits';
    const em = joinedTransaction(this.txHost);
    {
      const [rows]: [Array<{ callback_url: string | null; pause_seq: number }>] = await em.query(
        `UPDATE watchlists SET status = $3::text, lease_until = NULL, lease_owner = NULL, pause_seq = pause_seq + 1,
                next_check_at = CASE WHEN $3::text = 'paused_spending_limit'
                                     THEN (date_trunc('day', $4::timestamptz AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC'
                                     ELSE next_check_at END
          WHERE id = $1 AND status = 'active' AND lease_owner = $2 RETURNING callback_url, pause_seq`,
        [watchlistId, leaseOwner, status, this.clock.date()],
      );
      return rows[0] && { callbackUrl: rows[0].callback_url, seq: Number(rows[0].pause_seq), status };
    }
  }
}

/** A round's work under one claim: the watchlist, the round, and the claim that must still hold the lease. */
export interface RoundLease {
  watchlistId: string;
  round: number;
  leaseOwner: string;
}

/** Thrown when a round's lease is no longer this claim's: another worker may run the round now. */
export class LeaseLostError extends Error {
  constructor(watchlistId: string) {
    super(`Watchlist ${watchlistId}: the lease of the round was lost, this worker stops it`);
  }
}

/**
 * Holds the lease for the caller's transaction: the watchlist row is share-locked while the lease is
 * this claim's and not run out by `now`, so no other worker can claim it before the transaction ends.
 * Throws LeaseLostError otherwise (or answers false when `required` is false).
 */
async function holdLease(em: EntityManager, lease: RoundLease, now: Date, required = true): Promise<boolean> {
  const rows: unknown[] = await em.query(
    `SELECT 1 FROM watchlists WHERE id = $1 AND round = $2 AND round_running AND lease_owner = $3 AND lease_until > $4 FOR SHARE`,
    [lease.watchlistId, lease.round, lease.leaseOwner, now],
  );
  if (rows.length === 0 && required) throw new LeaseLostError(lease.watchlistId);
  return rows.length > 0;
}
