import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { EnabledChecks } from '../checks/checks';
import type { FilterResultDto } from '../provider/dto/filter-result.dto';
import { FieldChange, nextCheckAt, WatchInterval } from './watch-rules';

/** A watchlist whose lease this instance holds: a round to start (not running) or to resume. */
export interface ClaimedWatchlist {
  id: string;
  accountId: string;
  interval: WatchInterval;
  round: number;
  running: boolean;
  checks: EnabledChecks | null;
  cost: number | null;
}

export interface PendingEntry {
  id: string;
  phone: string;
  lastResult: FilterResultDto | null;
  /** The round's charge, when the entry is already charged for it. */
  chargeId: string | null;
}

export interface RoundOutcome {
  answered: Array<{ id: string; result: FilterResultDto; changes: FieldChange[] }>;
  failed: string[];
}

export interface DueEvent {
  id: string;
  type: 'watchlist.changes' | 'watchlist.paused';
  watchlistId: string;
  accountId: string;
  round: number;
  attempts: number;
  callbackUrl: string | null;
  status: string;
}

/**
 * The workers' side of watchlists. The watchlists table is the due-time table: a round is claimed by
 * a lease taken with `FOR UPDATE SKIP LOCKED`, so one instance works it at a time; each entry's
 * charged_round and checked_round make every step of a resumed round skip what is done.
 */
@Injectable()
export class RoundsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** A watchlist of the group with a round due or left running without a live lease, now leased here. */
  async claimDue(group: string, leaseSeconds: number): Promise<ClaimedWatchlist | undefined> {
    const [rows]: [Array<Record<string, unknown>>] = await this.db.query(
      `UPDATE watchlists SET lease_until = now() + make_interval(secs => $2)
        WHERE id = (SELECT id FROM watchlists
                     WHERE schedule_group = $1 AND status = 'active' AND (lease_until IS NULL OR lease_until < now())
                       AND (round_running OR next_check_at <= now())
                     ORDER BY next_check_at FOR UPDATE SKIP LOCKED LIMIT 1)
        RETURNING id, account_id, interval, round, round_running, round_checks, round_cost`,
      [group, leaseSeconds],
    );
    const row = rows[0];
    return (
      row && {
        id: row.id as string,
        accountId: row.account_id as string,
        interval: row.interval as WatchInterval,
        round: Number(row.round),
        running: row.round_running as boolean,
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
  async startRound(watchlistId: string, checks: EnabledChecks, cost: number, trigger: 'schedule' | 'manual'): Promise<number | undefined> {
    return this.db.transaction(async (em) => {
      const [rows]: [Array<{ round: number }>] = await em.query(
        `UPDATE watchlists SET round = round + 1, round_running = true, round_checks = $2, round_cost = $3
          WHERE id = $1 AND NOT round_running AND status = 'active' RETURNING round`,
        [watchlistId, JSON.stringify(checks), cost],
      );
      if (!rows[0]) return undefined;
      await em.query(`INSERT INTO watchlist_rounds (watchlist_id, round, trigger, cost_per_number) VALUES ($1, $2, $3, $4)`, [
        watchlistId, rows[0].round, trigger, cost,
      ]);
      return Number(rows[0].round);
    });
  }

  /** Keeps the lease while the round runs; false when the round must stop here (paused, deleted, taken over). */
  async renewLease(watchlistId: string, round: number, leaseSeconds: number): Promise<boolean> {
    const [rows]: [unknown[]] = await this.db.query(
      `UPDATE watchlists SET lease_until = now() + make_interval(secs => $3)
        WHERE id = $1 AND round = $2 AND round_running AND status = 'active' RETURNING 1`,
      [watchlistId, round, leaseSeconds],
    );
    return rows.length > 0;
  }

  /** Hands the watchlist back at once (shutdown, pause): another instance may resume it without waiting. */
  async releaseLease(watchlistId: string): Promise<void> {
    await this.db.query(`UPDATE watchlists SET lease_until = NULL WHERE id = $1`, [watchlistId]);
  }

  /** A round that cannot run (no check enabled) is skipped to the next due time. */
  async skipRound(watchlistId: string, next: Date): Promise<void> {
    await this.db.query(`UPDATE watchlists SET lease_until = NULL, next_check_at = $2 WHERE id = $1 AND NOT round_running`, [watchlistId, next]);
  }

  /**
   * The next entries of the round not yet checked, after `afterId` in id order (those removed meanwhile
   * only when already charged).
   */
  async pendingEntries(watchlistId: string, round: number, afterId: string, limit: number): Promise<PendingEntry[]> {
    const rows: Array<Record<string, unknown>> = await this.db.query(
      `SELECT id, phone, last_result, charged_round, charge_id FROM watchlist_entries
        WHERE watchlist_id = $1 AND id > $3 AND checked_round < $2 AND (removed_at IS NULL OR charged_round = $2)
        ORDER BY id LIMIT $4`,
      [watchlistId, round, afterId, limit],
    );
    return rows.map((row) => ({
      id: String(row.id),
      phone: row.phone as string,
      lastResult: row.last_result as FilterResultDto | null,
      chargeId: Number(row.charged_round) === round ? String(row.charge_id) : null,
    }));
  }

  /**
   * Charges entries for the round and marks them charged in one transaction: `charge` writes the
   * ledger rows (in this transaction), so an entry is marked iff its charge exists. Entries marked
   * meanwhile are skipped (locked or already charged). Returns the charge id of each entry charged.
   */
  async chargeEntries(
    round: number,
    entryIds: string[],
    charge: (transaction: EntityManager, entries: Array<{ id: string; phone: string }>) => Promise<Map<string, string>>,
  ): Promise<Map<string, string>> {
    return this.db.transaction(async (em) => {
      const locked: Array<{ id: string; phone: string }> = await em.query(
        `SELECT id::text, phone FROM watchlist_entries WHERE id = ANY($1::bigint[]) AND charged_round < $2 ORDER BY id FOR UPDATE SKIP LOCKED`,
        [entryIds, round],
      );
      if (locked.length === 0) return new Map();
      const charged = await charge(em, locked);
      if (charged.size > 0) {
        await em.query(
          `UPDATE watchlist_entries e SET charged_round = $1, charge_id = c.charge_id
             FROM unnest($2::bigint[], $3::bigint[]) AS c(id, charge_id) WHERE e.id = c.id`,
          [round, [...charged.keys()], [...charged.values()]],
        );
      }
      return charged;
    });
  }

  /**
   * Writes a chunk's answers, their changes, and the failures with their refunds (`refund`, in this
   * transaction), once: only entries not yet checked in the round are written, and only theirs count.
   */
  async recordOutcome(
    watchlistId: string,
    round: number,
    outcome: RoundOutcome,
    refund: (transaction: EntityManager, chargeId: string) => Promise<void>,
  ): Promise<void> {
    await this.db.transaction(async (em) => {
      const [written]: [Array<{ id: string; phone: string }>] = await em.query(
        `UPDATE watchlist_entries e SET last_result = a.result, last_error = NULL, checked_round = $1, checked_at = now()
           FROM unnest($2::bigint[], $3::jsonb[]) AS a(id, result)
          WHERE e.id = a.id AND e.checked_round < $1 RETURNING e.id::text, e.phone`,
        [round, outcome.answered.map((a) => a.id), outcome.answered.map((a) => JSON.stringify(a.result))],
      );
      const phones = new Map(written.map((row) => [row.id, row.phone]));
      const changes = outcome.answered.filter((a) => phones.has(a.id)).flatMap((a) => a.changes.map((c) => ({ ...c, id: a.id, phone: phones.get(a.id)! })));
      if (changes.length > 0) {
        await em.query(
          `INSERT INTO watchlist_changes (watchlist_id, entry_id, round, phone, field, before, after)
           SELECT $1, c.entry_id, $2, c.phone, c.field, c.before, c.after
             FROM unnest($3::bigint[], $4::text[], $5::text[], $6::jsonb[], $7::jsonb[]) AS c(entry_id, phone, field, before, after)
           ON CONFLICT (entry_id, round, field) DO NOTHING`,
          [watchlistId, round, changes.map((c) => c.id), changes.map((c) => c.phone), changes.map((c) => c.field),
            changes.map((c) => JSON.stringify(c.before)), changes.map((c) => JSON.stringify(c.after))],
        );
      }
      const [failed]: [Array<{ charge_id: string }>] = await em.query(
        `UPDATE watchlist_entries SET last_error = 'PROVIDER_UNAVAILABLE', checked_round = $1, checked_at = now()
          WHERE id = ANY($2::bigint[]) AND checked_round < $1 RETURNING charge_id::text`,
        [round, outcome.failed],
      );
      for (const row of failed) await refund(em, row.charge_id);
      await em.query(
        `UPDATE watchlist_rounds SET checked = checked + $3, failed = failed + $4, changes = changes + $5 WHERE watchlist_id = $1 AND round = $2`,
        [watchlistId, round, written.length, failed.length, changes.length],
      );
    });
  }

  /**
   * Ends the round: the watchlist is due again an interval after the round started, and when the round
   * found changes and a callback is set, its `watchlist.changes` event is queued, in the same transaction.
   */
  async finishRound(watchlistId: string, round: number, interval: WatchInterval): Promise<void> {
    await this.db.transaction(async (em) => {
      const [rounds]: [Array<{ changes: number; started_at: Date }>] = await em.query(
        `UPDATE watchlist_rounds SET completed_at = now() WHERE watchlist_id = $1 AND round = $2 AND completed_at IS NULL
         RETURNING changes, started_at`,
        [watchlistId, round],
      );
      if (!rounds[0]) return;
      const next = new Date(Math.max(Date.now(), nextCheckAt(rounds[0].started_at, interval).getTime()));
      const [lists]: [Array<{ callback_url: string | null }>] = await em.query(
        `UPDATE watchlists SET round_running = false, lease_until = NULL, next_check_at = $3
          WHERE id = $1 AND round = $2 AND round_running RETURNING callback_url`,
        [watchlistId, round, next],
      );
      if (lists[0]?.callback_url && Number(rounds[0].changes) > 0) await this.queueEvent(em, watchlistId, 'watchlist.changes', round);
    });
  }

  /** The balance cannot cover the round (or the rest of it): the watchlist pauses, and says so by callback. */
  async pauseForCredits(watchlistId: string, round: number): Promise<void> {
    await this.db.transaction(async (em) => {
      const [rows]: [Array<{ callback_url: string | null }>] = await em.query(
        `UPDATE watchlists SET status = 'paused_insufficient_credits', lease_until = NULL WHERE id = $1 AND status = 'active' RETURNING callback_url`,
        [watchlistId],
      );
      if (rows[0]?.callback_url) await this.queueEvent(em, watchlistId, 'watchlist.paused', round);
    });
  }

  /** Events due for delivery, leased to this instance for `leaseSeconds` (a crashed delivery is retried after it). */
  async claimDueEvents(group: string, limit: number, leaseSeconds: number): Promise<DueEvent[]> {
    const [rows]: [Array<Record<string, unknown>>] = await this.db.query(
      `WITH due AS (
         SELECT id FROM watchlist_events
          WHERE schedule_group = $1 AND delivered_at IS NULL AND given_up_at IS NULL AND next_attempt_at <= now()
          ORDER BY next_attempt_at FOR UPDATE SKIP LOCKED LIMIT $2)
       UPDATE watchlist_events ev SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => $3)
         FROM due, watchlists w WHERE ev.id = due.id AND w.id = ev.watchlist_id
       RETURNING ev.id, ev.type, ev.watchlist_id, w.account_id, ev.round, ev.attempts, w.callback_url, w.status`,
      [group, limit, leaseSeconds],
    );
    return rows.map((row) => ({
      id: row.id as string,
      type: row.type as DueEvent['type'],
      watchlistId: row.watchlist_id as string,
      accountId: row.account_id as string,
      round: Number(row.round),
      attempts: Number(row.attempts),
      callbackUrl: row.callback_url as string | null,
      status: row.status as string,
    }));
  }

  async eventDelivered(eventId: string): Promise<void> {
    await this.db.query(`UPDATE watchlist_events SET delivered_at = now() WHERE id = $1`, [eventId]);
  }

  /** Retried at `retryAt`, or given up when undefined. */
  async eventFailed(eventId: string, retryAt: Date | undefined): Promise<void> {
    await this.db.query(
      retryAt ? `UPDATE watchlist_events SET next_attempt_at = $2 WHERE id = $1` : `UPDATE watchlist_events SET given_up_at = now() WHERE id = $1`,
      retryAt ? [eventId, retryAt] : [eventId],
    );
  }

  private async queueEvent(em: EntityManager, watchlistId: string, type: DueEvent['type'], round: number): Promise<void> {
    await em.query(
      `INSERT INTO watchlist_events (id, watchlist_id, type, round, schedule_group)
       SELECT gen_random_uuid(), id, $2, $3, schedule_group FROM watchlists WHERE id = $1
       ON CONFLICT (watchlist_id, type, round) DO NOTHING`,
      [watchlistId, type, round],
    );
  }
}
