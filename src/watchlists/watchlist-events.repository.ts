import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { PausedStatus } from './watchlist-rows';

export type EventType = 'watchlist.changes' | 'watchlist.paused';

export interface DueEvent {
  id: string;
  type: EventType;
  watchlistId: string;
  accountId: string;
  round: number;
  attempts: number;
  callbackUrl: string | null;
  status: string;
  /** For `watchlist.paused`: the pause (null for events queued before pauses said which). */
  pausedStatus: PausedStatus | null;
}

/** The outbox of watchlist callbacks (watchlist_events), as the workers deliver it. */
@Injectable()
export class WatchlistEventsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Events due for delivery, leased to this instance for `leaseSeconds` (a crashed delivery is retried after it). */
  async claimDueEvents(group: string, limit: number, leaseSeconds: number): Promise<DueEvent[]> {
    const [rows]: [Array<Record<string, unknown>>] = await this.db.query(
      `WITH due AS (
         SELECT id FROM watchlist_events
          WHERE schedule_group = $1 AND delivered_at IS NULL AND given_up_at IS NULL AND next_attempt_at <= now()
          ORDER BY next_attempt_at FOR UPDATE SKIP LOCKED LIMIT $2)
       UPDATE watchlist_events ev SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => $3)
         FROM due, watchlists w WHERE ev.id = due.id AND w.id = ev.watchlist_id
       RETURNING ev.id, ev.type, ev.watchlist_id, w.account_id, ev.round, ev.attempts, w.callback_url, w.status, ev.paused_status`,
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
      pausedStatus: row.paused_status as PausedStatus | null,
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
}
