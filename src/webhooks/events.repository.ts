import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { NO_KEY_ABOVE } from '../common/keyset-page';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';

export const EVENT_STATES = ['pending', 'delivered', 'failed', 'no_webhook'] as const;
export type EventState = (typeof EVENT_STATES)[number];

export interface AccountEvent {
  id: string;
  accountId: string;
  type: string;
  payload: Record<string, unknown>;
  state: EventState;
  attempts: number;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
  /** Where it goes: a bulk job's or a watchlist's callback_url (`payload` is then the whole body), or null: the account's webhook_url. */
  callbackUrl: string | null;
}

/** How long events are kept and listed. */
export const EVENT_RETENTION_DAYS = 30;

const COLUMNS = 'id, account_id, type, payload, state, attempts, last_error, created_at, delivered_at, callback_url';

/**
 * The one outbox of outbound deliveries (account_events, migrations CustomerControls and
 * OneCallbackOutbox): account events to webhook_url, bulk jobs' and watchlists' callbacks to their
 * callback_url. balance.low rows are written by the charge statements themselves (credits/), in the
 * same statement as the charge; the rest through `record`, inside the transaction of what caused them
 * when there is one (it joins the caller's service's transaction). Delivery claims due rows with a
 * lease, so that instances share the work without sending one event twice at the same time.
 */
@Injectable()
export class EventsRepository {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly txHost: TransactionHost<TypeOrmTx>,
  ) {}

  /** One delivery; writing the same `dedupeKey` again changes nothing (a retried finisher). */
  async record(accountId: string, type: string, payload: object, dedupeKey: string, callbackUrl: string | null = null, phoneHashes: string[] = []): Promise<void> {
    await this.txHost.tx.query(
      `INSERT INTO account_events (account_id, type, payload, dedupe_key, callback_url, phone_hashes) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT ON CONSTRAINT account_events_dedupe_key_unique DO NOTHING`,
      [accountId, type, JSON.stringify(payload), dedupeKey, callbackUrl, phoneHashes],
    );
  }

  /** Pending deliveries whose dedupe key starts with `keyPrefix` are given up (what they announce is gone). */
  async giveUpPending(accountId: string, keyPrefix: string, reason: string): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE account_events SET state = 'failed', last_error = $3
        WHERE account_id = $1 AND state = 'pending' AND starts_with(dedupe_key, $2)`,
      [accountId, keyPrefix, reason],
    );
  }

  /**
   * Up to `limit` pending events due at `now`, each counted as an attempt and leased for
   * `leaseSeconds` (an instance that dies while delivering leaves it to be retried after the lease).
   */
  async claimDue(limit: number, leaseSeconds: number, now: Date): Promise<AccountEvent[]> {
    // TypeORM answers an UPDATE ... RETURNING with [rows, count].
    const [rows]: [EventRow[], number] = await this.db.query(
      `UPDATE account_events SET attempts = attempts + 1, next_attempt_at = $3::timestamptz + make_interval(secs => $2)
        WHERE id IN (SELECT id FROM account_events WHERE state = 'pending' AND next_attempt_at <= $3::timestamptz
                      ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
        RETURNING ${COLUMNS}`,
      [limit, leaseSeconds, now],
    );
    return rows.map(toEvent);
  }

  /** Pending deliveries whose dedupe key starts with `keyPrefix` go to `callbackUrl` from their next attempt. */
  async retargetPending(accountId: string, keyPrefix: string, callbackUrl: string): Promise<void> {
    await this.txHost.tx.query(
      `UPDATE account_events SET callback_url = $3
        WHERE account_id = $1 AND state = 'pending' AND callback_url IS NOT NULL AND starts_with(dedupe_key, $2)`,
      [accountId, keyPrefix, callbackUrl],
    );
  }

  async markDelivered(id: string, at: Date): Promise<void> {
    await this.db.query(`UPDATE account_events SET state = 'delivered', delivered_at = $2, last_error = NULL WHERE id = $1`, [id, at]);
  }

  /** A failed attempt: tried again from `retryAt`, or (null) given up as failed. */
  async markAttemptFailed(id: string, error: string, retryAt: Date | null): Promise<void> {
    await this.db.query(
      `UPDATE account_events
          SET last_error = left($2::text, 500),
              state = CASE WHEN $3::timestamptz IS NULL THEN 'failed' ELSE state END,
              next_attempt_at = COALESCE($3::timestamptz, next_attempt_at)
        WHERE id = $1`,
      [id, error, retryAt],
    );
  }

  async markNoWebhook(id: string): Promise<void> {
    await this.db.query(`UPDATE account_events SET state = 'no_webhook', last_error = 'no webhook_url set' WHERE id = $1`, [id]);
  }

  /** The account's events (to webhook_url; callbacks to a callback_url are not listed) created after `since`, newest first, keyset-paginated on the id. */
  async page(accountId: string, limit: number, beforeId: string | undefined, since: Date): Promise<AccountEvent[]> {
    const rows: EventRow[] = await this.db.query(
      // An owner's page: the shape of src/common/keyset-page.ts, on account_events_account_id_idx.
      `SELECT ${COLUMNS} FROM account_events
        WHERE account_id = ANY(ARRAY[$1::uuid]) AND callback_url IS NULL AND created_at > $4
          AND id < COALESCE($2::bigint, ${NO_KEY_ABOVE})
        ORDER BY account_id, id DESC LIMIT $3`,
      [accountId, beforeId ?? null, limit, since],
    );
    return rows.map(toEvent);
  }

  /** The events created before `before`, deleted; resolves to how many. */
  async deleteCreatedBefore(before: Date): Promise<number> {
    const [, deleted]: [unknown[], number] = await this.db.query(`DELETE FROM account_events WHERE created_at < $1`, [before]);
    return deleted;
  }
}

interface EventRow {
  id: string;
  account_id: string;
  type: string;
  payload: Record<string, unknown>;
  state: EventState;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  delivered_at: Date | null;
  callback_url: string | null;
}

function toEvent(row: EventRow): AccountEvent {
  return {
    id: String(row.id),
    accountId: row.account_id,
    type: row.type,
    payload: row.payload,
    state: row.state,
    attempts: row.attempts,
    lastError: row.last_error,
    createdAt: row.created_at,
    deliveredAt: row.delivered_at,
    callbackUrl: row.callback_url,
  };
}
