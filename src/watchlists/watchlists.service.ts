import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AccountsService } from '../accounts/accounts.service';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { anyCheckEnabled, NO_CHECK_ENABLED } from '../checks/checks';
import { AppError } from '../common/errors';
import { keysetPage } from '../common/keyset-page';
import { E164_MESSAGE, normalizePhone } from '../common/phone';
import { AppConfig } from '../config/app-config';
import { CreditsService } from '../credits/credits.service';
import { IdempotencyService, SerializedAnswer } from '../idempotency/idempotency.service';
import { SettingsService } from '../settings/settings.service';
import { refusedCallbackUrl } from '../webhooks/callback-address';
import {
  CreateWatchlistDto, RejectedEntryDto, RoundStartedDto, UpdateWatchlistDto, WatchlistChangePageDto, WatchlistCreatedDto, WatchlistDto,
  WatchlistPageDto, WatchlistSummaryDto,
} from './dto/watchlists.dto';
import { RoundsRepository } from './rounds.repository';
import { nextCheckAt, roundSource } from './watch-rules';
import { WatchlistWorker } from './watchlist-worker';
import { NewEntry, RoundRow, Watchlist, WatchlistsRepository } from './watchlists.repository';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The watchlist routes: what they validate, limit and bill before the rounds run (RoundRunner). */
@Injectable()
export class WatchlistsService {
  private readonly allowPrivateCallbacks: boolean;
  private readonly group: string;

  constructor(
    private readonly watchlists: WatchlistsRepository,
    private readonly rounds: RoundsRepository,
    private readonly worker: WatchlistWorker,
    private readonly settings: SettingsService,
    private readonly credits: CreditsService,
    private readonly accounts: AccountsService,
    private readonly idempotency: IdempotencyService,
    config: AppConfig,
  ) {
    this.allowPrivateCallbacks = config.bulk.webhook.allowPrivateNetworks;
    this.group = config.watchlists.scheduleGroup;
  }

  /**
   * The creation as the bytes of its answer (a replay sends the same). Creating charges nothing itself
   * (rounds charge), so no charge ever carries the key's id and the "answered again for free" path of
   * an Idempotency-Key cannot arise here.
   */
  create(account: AuthenticatedAccount, body: CreateWatchlistDto, idempotencyKey: string | undefined): Promise<SerializedAnswer> {
    return this.idempotency.run(account.accountId, idempotencyKey, { route: 'POST /api/v1/watchlists', body }, {
      charged: async () => JSON.stringify(await this.createNow(account.accountId, body)),
      free: () => Promise.reject(new AppError('IDEMPOTENCY_CONFLICT', 'A request with this Idempotency-Key is still running; retry when it has answered.')),
    });
  }

  /**
   * 400 for a refused callback, no check enabled, no valid number or the plan's limit; 402 when the
   * balance cannot cover the first round, which starts at once (it records the baseline answers).
   */
  private async createNow(accountId: string, body: CreateWatchlistDto): Promise<WatchlistCreatedDto> {
    this.checkCallback(body.callback_url);
    if (body.references && body.references.length !== body.phones.length) {
      throw new AppError('INVALID_REQUEST', `references must have one entry per phone (${body.phones.length}), it has ${body.references.length}`);
    }
    const { entries, rejected } = parseEntries(body.phones, body.references);
    if (entries.length === 0) throw new AppError('INVALID_REQUEST', `No number to watch: every entry fails the E.164 rule (${E164_MESSAGE}).`);
    const { checks, cost } = await this.settings.checksFor(accountId);
    if (!anyCheckEnabled(checks)) throw new AppError('INVALID_REQUEST', NO_CHECK_ENABLED);
    await this.requireBalance(accountId, cost * entries.length);
    const id = randomUUID();
    const watchlist = await this.watchlists.create(
      { id, accountId, name: body.name ?? null, interval: body.interval, callbackUrl: body.callback_url ?? null, group: this.group },
      entries,
      await this.accounts.maxWatchedNumbers(accountId),
    );
    this.worker.wake();
    return {
      id,
      name: watchlist.name,
      total: watchlist.total,
      interval: watchlist.interval,
      next_check_at: watchlist.nextCheckAt.toISOString(),
      cost_per_round: cost * watchlist.total,
      rejected,
    };
  }

  async list(account: AuthenticatedAccount, limit: number, cursor: string | undefined): Promise<WatchlistPageDto> {
    const page = await keysetPage('wl', limit, cursor, (rows, before) => this.watchlists.page(account.accountId, rows, before), (w) => w.seq);
    const lastRounds = await this.watchlists.lastRounds(page.rows.map((w) => w.id));
    return { watchlists: page.rows.map((w) => summary(w, lastRounds.get(w.id))), next_cursor: page.nextCursor };
  }

  async get(account: AuthenticatedAccount, id: string, limit: number, cursor: string | undefined): Promise<WatchlistDto> {
    const watchlist = await this.own(account, id);
    const lastRound = (await this.watchlists.lastRounds([watchlist.id])).get(watchlist.id);
    const page = await keysetPage('we', limit, cursor, (rows, before) => this.watchlists.entries(watchlist.id, rows, before), (e) => e.id);
    return {
      ...summary(watchlist, lastRound),
      entries: page.rows.map((e) => ({ phone: e.phone, reference: e.reference, result: e.result, error: e.error, checked_at: e.checkedAt?.toISOString() ?? null })),
      next_cursor: page.nextCursor,
    };
  }

  async update(account: AuthenticatedAccount, id: string, body: UpdateWatchlistDto): Promise<WatchlistSummaryDto> {
    // Bad input is a 400 whatever the id (the contract's order: validation before lookups).
    if (body.callback_url) this.checkCallback(body.callback_url);
    const watchlist = await this.own(account, id);
    const lastRound = (await this.watchlists.lastRounds([watchlist.id])).get(watchlist.id);
    let status: Watchlist['status'] | undefined;
    let next: Date | undefined;
    if (body.paused === true) status = 'paused';
    if (body.paused === false && watchlist.status !== 'active') {
      status = 'active';
      // A round refused for credits runs as soon as it is resumed; a paused schedule picks up where it was.
      if (watchlist.status === 'paused_insufficient_credits' && !watchlist.roundRunning) next = new Date();
    }
    if (body.interval && body.interval !== watchlist.interval && !next) {
      next = new Date(Math.max(Date.now(), nextCheckAt(lastRound?.startedAt ?? watchlist.createdAt, body.interval).getTime()));
    }
    if (body.add) {
      const { entries, rejected } = parseEntries(body.add, undefined);
      if (rejected.length > 0) throw new AppError('INVALID_REQUEST', `add[${rejected[0].index}]: ${E164_MESSAGE}`);
      await this.watchlists.addEntries(account.accountId, watchlist.id, entries, await this.accounts.maxWatchedNumbers(account.accountId));
    }
    if (body.remove) await this.watchlists.removeEntries(watchlist.id, body.remove.map((phone) => normalizePhone(phone) ?? phone));
    await this.watchlists.update(account.accountId, watchlist.id, { name: body.name, interval: body.interval, callbackUrl: body.callback_url, status, nextCheckAt: next });
    if (status === 'active') this.worker.wake();
    return summary((await this.own(account, id)), lastRound);
  }

  async remove(account: AuthenticatedAccount, id: string): Promise<void> {
    const watchlist = await this.own(account, id);
    await this.watchlists.markDeleted(account.accountId, watchlist.id);
  }

  /** Starts a round now (same billing as a scheduled one); a round already running is answered as it is. */
  async checkNow(account: AuthenticatedAccount, id: string): Promise<RoundStartedDto> {
    const watchlist = await this.own(account, id);
    if (watchlist.status !== 'active') {
      throw new AppError('INVALID_REQUEST', `This watchlist is ${watchlist.status}: resume it with PATCH {"paused": false} first.`);
    }
    const { checks, cost } = await this.settings.checksFor(account.accountId);
    if (watchlist.roundRunning) return { id, round: watchlist.round, status: 'running', cost: cost * watchlist.total };
    if (!anyCheckEnabled(checks)) throw new AppError('INVALID_REQUEST', NO_CHECK_ENABLED);
    await this.requireBalance(account.accountId, cost * watchlist.total);
    const round = await this.rounds.startRound(watchlist.id, checks, cost, 'manual');
    this.worker.wake();
    const now = await this.own(account, id);
    return { id, round: round ?? now.round, status: 'running', cost: cost * watchlist.total };
  }

  async changes(account: AuthenticatedAccount, id: string, since: string | undefined, limit: number, cursor: string | undefined): Promise<WatchlistChangePageDto> {
    const watchlist = await this.own(account, id);
    const page = await keysetPage('wc', limit, cursor, (rows, before) => this.watchlists.changes(watchlist.id, since ? new Date(since) : undefined, rows, before), (c) => c.id);
    return {
      changes: page.rows.map((c) => ({
        phone: c.phone, reference: c.reference, field: c.field, before: c.before, after: c.after, round: c.round, detected_at: c.detectedAt.toISOString(),
      })),
      next_cursor: page.nextCursor,
    };
  }

  private checkCallback(url: string | undefined): void {
    const refused = url === undefined ? undefined : refusedCallbackUrl(url, this.allowPrivateCallbacks);
    if (refused) throw new AppError('INVALID_REQUEST', `callback_url must point to a public address: ${refused}.`);
  }

  private async requireBalance(accountId: string, needed: number): Promise<void> {
    const balance = await this.credits.balance(accountId);
    if (balance < needed) {
      throw new AppError('INSUFFICIENT_CREDITS', `A round of this watchlist costs ${needed} credits and your balance is ${balance}. Top up your balance to continue.`);
    }
  }

  /** Unknown, malformed, deleted and other accounts' ids all answer the same 404. */
  private async own(account: AuthenticatedAccount, id: string): Promise<Watchlist> {
    const watchlist = UUID.test(id) ? await this.watchlists.find(account.accountId, id.toLowerCase()) : undefined;
    if (!watchlist) throw new AppError('NOT_FOUND', 'No watchlist with this id.');
    return watchlist;
  }
}

/** Entries that pass the E.164 rule, each number once (its first reference kept), and those that do not. */
function parseEntries(phones: string[], references: string[] | undefined): { entries: NewEntry[]; rejected: RejectedEntryDto[] } {
  const entries = new Map<string, NewEntry>();
  const rejected: RejectedEntryDto[] = [];
  phones.forEach((raw, index) => {
    const phone = normalizePhone(raw);
    if (!phone) rejected.push({ index, phone: raw, code: 'INVALID_REQUEST', message: E164_MESSAGE });
    else if (!entries.has(phone)) entries.set(phone, { phone, reference: references?.[index] ?? null });
  });
  return { entries: [...entries.values()], rejected };
}

function summary(w: Watchlist, round: RoundRow | undefined): WatchlistSummaryDto {
  return {
    id: w.id,
    name: w.name,
    status: w.status,
    interval: w.interval,
    total: w.total,
    callback_url: w.callbackUrl,
    next_check_at: w.nextCheckAt.toISOString(),
    last_round: round
      ? {
          round: round.round,
          status: round.completedAt ? 'completed' : 'running',
          trigger: round.trigger,
          checked: round.checked,
          failed: round.failed,
          changes: round.changes,
          cost_per_number: round.costPerNumber,
          ledger_source: roundSource(w.id, round.round),
          started_at: round.startedAt.toISOString(),
          completed_at: round.completedAt?.toISOString() ?? null,
        }
      : null,
    created_at: w.createdAt.toISOString(),
  };
}
