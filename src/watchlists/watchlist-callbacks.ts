import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { showOrigin } from '../checks/provenance';
import { keyedHash } from '../common/keyed-hash';
import { AppConfig } from '../config/app-config';
import { EventsService } from '../webhooks/events.service';
import type { PausedStatus } from './watchlist-rows';
import { WatchlistsRepository } from './watchlists.repository';

/** The dedupe keys of a watchlist's callbacks start with this (deleting it gives up the pending ones). */
export function watchlistKeyPrefix(watchlistId: string): string {
  return `watchlist:${watchlistId}:`;
}

/**
 * What a watchlist's callback_url receives, recorded in the outbox of webhooks/ (which signs, sends
 * and retries it) inside the transaction that ended or paused the round: a callback exists iff the
 * round's end or pause does, once per round (and per pause of a round).
 */
@Injectable()
export class WatchlistCallbacks {
  constructor(
    private readonly watchlists: WatchlistsRepository,
    private readonly outbox: EventsService,
    private readonly config: AppConfig,
  ) {}

  /** `watchlist.changes`: the changes the round found. */
  async changes(accountId: string, watchlistId: string, round: number, callbackUrl: string): Promise<void> {
    const changes = await this.watchlists.changesOfRound(watchlistId, round);
    const body = {
      id: randomUUID(),
      event: 'watchlist.changes',
      watchlist_id: watchlistId,
      round,
      changes: changes.map((c) => ({
        phone: c.phone,
        reference: c.reference,
        field: c.field,
        before: c.before,
        after: c.after,
        answered_by: showOrigin(c.answeredBy),
        detected_at: c.detectedAt.toISOString(),
      })),
    };
    const hashes = [...new Set(changes.map((c) => keyedHash(this.config.dataHashKey, c.phone)))];
    await this.outbox.callback(accountId, 'watchlist.changes', callbackUrl, body, `${watchlistKeyPrefix(watchlistId)}changes:${round}`, hashes);
  }

  /** `watchlist.paused`: the round was refused by the balance or the daily spending limit. */
  async paused(accountId: string, watchlistId: string, round: number, seq: number, status: PausedStatus, callbackUrl: string): Promise<void> {
    const message =
      status === 'paused_spending_limit'
        ? 'Your daily spending limit (daily_credit_limit) cannot cover this round: it was not run (or not finished). It resumes by itself ' +
          'after 00:00 UTC; raise the limit and PATCH the watchlist with {"paused": false} to run it now.'
        : 'The balance cannot cover this round: it was not run. Top up, then PATCH the watchlist with {"paused": false}.';
    const body = { id: randomUUID(), event: 'watchlist.paused', watchlist_id: watchlistId, round, status, message };
    await this.outbox.callback(accountId, 'watchlist.paused', callbackUrl, body, `${watchlistKeyPrefix(watchlistId)}paused:${round}:${seq}`);
  }
}
