import { Injectable } from '@nestjs/common';
import { Clock, daysBefore } from '../common/clock';
import { keysetPage } from '../common/keyset-page';
import { AccountEventDto, AccountEventPageDto } from './dto/events.dto';
import { AccountEvent, EVENT_RETENTION_DAYS, EventsRepository } from './events.repository';

/** What a receiver gets: the event's id (the same on every retry, to deduplicate), type, time and data. */
export function eventBody(event: AccountEvent): { id: string; type: string; created_at: string; data: Record<string, unknown> } {
  return { id: event.id, type: event.type, created_at: event.createdAt.toISOString(), data: event.payload };
}

@Injectable()
export class EventsService {
  constructor(
    private readonly events: EventsRepository,
    private readonly clock: Clock,
  ) {}

  /**
   * A delivery to a callback_url of the account's (a bulk job's, a watchlist's), signed with its
   * webhook secrets when due: `body` is what the receiver gets. Once per `dedupeKey`. Inside a
   * transaction a service opened, it commits with it.
   */
  /** `phoneHashes`: the keyed hashes of the numbers the body names (src/common/number-hash.ts), what an erasure finds it by. */
  callback(accountId: string, type: string, callbackUrl: string, body: object, dedupeKey: string, phoneHashes: string[] = []): Promise<void> {
    return this.events.record(accountId, type, body, dedupeKey, callbackUrl, phoneHashes);
  }

  /** The pending deliveries of `keyPrefix` (a deleted watchlist's) are given up, never sent. */
  giveUpPending(accountId: string, keyPrefix: string, reason: string): Promise<void> {
    return this.events.giveUpPending(accountId, keyPrefix, reason);
  }

  /** The pending deliveries of `keyPrefix` go to `callbackUrl` from now on; with null, they are given up. */
  retargetPending(accountId: string, keyPrefix: string, callbackUrl: string | null): Promise<void> {
    if (callbackUrl === null) return this.events.giveUpPending(accountId, keyPrefix, 'callback_url was removed');
    return this.events.retargetPending(accountId, keyPrefix, callbackUrl);
  }

  /** A bulk job without callback_url completed: its completion goes to the account's webhook_url. Once per job. */
  bulkCompleted(accountId: string, job: { id: string; status: string; total: number }): Promise<void> {
    return this.events.record(accountId, 'bulk.completed', { id: job.id, status: job.status, total: job.total }, `bulk.completed:${job.id}`);
  }

  /** The account's events of the retention period (EVENT_RETENTION_DAYS back from the Clock's now), newest first. */
  async list(accountId: string, limit: number, cursor: string | undefined): Promise<AccountEventPageDto> {
    const since = daysBefore(this.clock.date(), EVENT_RETENTION_DAYS);
    const page = await keysetPage('ev', limit, cursor, (rows, beforeId) => this.events.page(accountId, rows, beforeId, since), (event) => event.id);
    return { events: page.rows.map(toDto), next_cursor: page.nextCursor };
  }
}

function toDto(event: AccountEvent): AccountEventDto {
  return {
    id: event.id,
    type: event.type,
    data: event.payload,
    state: event.state,
    attempts: event.attempts,
    last_error: event.lastError,
    created_at: event.createdAt.toISOString(),
    delivered_at: event.deliveredAt?.toISOString() ?? null,
  };
}
