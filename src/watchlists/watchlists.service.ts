import { showOrigin, showProvenance } from '../checks/provenance';
import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AccountsService } from '../accounts/accounts.service';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { Clock } from '../common/clock';
import { AppError } from '../common/errors';
import { isUuid } from '../common/uuid';
import { keysetPage } from '../common/keyset-page';
import { E164_MESSAGE, normalizePhone } from '../common/phone';
import { AppConfig } from '../config/app-config';
import { type HashKey, keyedHash } from '../common/keyed-hash';
import { storedFormHash } from '../common/number-hash';
import { CreditsService } from '../credits/credits.service';
import { IdempotencyService, SerializedAnswer } from '../idempotency/idempotency.service';
import { SettingsService } from '../settings/settings.service';
import { type CallbackAddressPolicy, requireCallbackUrl } from '../common/callback-address';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';
import { EventsService } from '../webhooks/events.service';
import { watchlistKeyPrefix } from './watchlist-callbacks';
import {
  CreateWatchlistDto, RejectedEntryDto, RoundStartedDto, UpdateWatchlistDto, WatchlistChangePageDto, WatchlistCreatedDto, WatchlistDto,
  WatchlistPageDto, WatchlistSummaryDto,
} from './dto/watchlists.dto';
import { RoundsRepository } from './rounds.repository';
import { nextCheckAt, roundSource } from './watch-rules';
import { WatchlistWorker } from './watchlist-worker';
import { ERASED_CREATION_ANSWER, NewEntry, RoundRow, Watchlist, WatchlistsRepository } from './watchlists.repository';
import { creditCount } from '../common/credit-count';


/** The watchlist routes: what they validate, limit and bill before the rounds run (RoundRunner). */
const UPDATABLE_FIELDS = ['name', 'interval', 'callback_url', 'paused', 'add', 'remove'] as const satisfies ReadonlyArray<keyof UpdateWatchlistDto>;

@Injectable()
export class WatchlistsService {
  private readonly callbackPolicy: CallbackAddressPolicy;
  private readonly group: string;
  /** The keyed hashes of the rejected forms a creation answer lists are kept beside it (an erasure's index). */
  private readonly hashKey: HashKey;

  constructor(
    private readonly watchlists: WatchlistsRepository,
    private readonly rounds: RoundsRepository,
    private readonly worker: WatchlistWorker,
    private readonly settings: SettingsService,
    private readonly credits: CreditsService,
    private readonly accounts: AccountsService,
    private readonly idempotency: IdempotencyService,
    private readonly callbacks: EventsService,
    private readonly txHost: TransactionHost<TypeOrmTx>,
    private readonly clock: Clock,
    config: AppConfig,
  ) {
    this.callbackPolicy = config.callbacks;
    this.group = config.watchlists.scheduleGroup;
    this.hashKey = config.dataHashKey;
  }

  /**
   * The creation as the bytes of its answer (a replay sends the same). Creating charges nothing itself
   * (rounds charge), so no charge carries the key's id: the watchlist does instead (a unique column
   * written in the creation's transaction). A retry after the key's answer was lost finds the
   * watchlist of the key and replays its creation answer (`made`), never creating a second one; two
   * attempts at once meet on the unique index.
   */
  create(account: AuthenticatedAccount, body: CreateWatchlistDto, idempotencyKey: string | undefined): Promise<SerializedAnswer> {
    return this.idempotency.run(account.accountId, idempotencyKey, { route: 'POST /api/v1/watchlists', body }, {
      charged: (keyId) => this.createNow(account.accountId, body, keyId),
      made: (keyId) => this.watchlists.creationAnswer(keyId),
      rerunUncharged: () => Promise.reject(new AppError('IDEMPOTENCY_CONFLICT', 'A request with this Idempotency-Key is still running; retry when it has answered.')),
    });
  }

  /**
   * 400 for a refused callback, no check enabled, no valid number or the plan's limit; 402 when the
   * balance cannot cover the first round, which starts at once (it records the baseline answers).
   */
  private async createNow(accountId: string, body: CreateWatchlistDto, keyId: string | undefined): Promise<string> {
    const earlier = keyId === undefined ? undefined : await this.watchlists.creationAnswer(keyId);
    if (earlier === null) throw new AppError('IDEMPOTENCY_CONFLICT', ERASED_CREATION_ANSWER);
    if (earlier !== undefined) return earlier;
    requireCallbackUrl('callback_url', body.callback_url, this.callbackPolicy);
    if (body.references && body.references.length !== body.phones.length) {
      throw new AppError('INVALID_REQUEST', `references must have one entry per phone (${body.phones.length}), it has ${body.references.length}`);
    }
    const { entries, rejected } = parseEntries(body.phones, body.references, this.hashKey);
    if (entries.length === 0) throw new AppError('INVALID_REQUEST', `No number to watch: every entry fails the E.164 rule (${E164_MESSAGE}).`);
    const { cost } = await this.settings.requireChecks(accountId);
    await this.requireBalance(accountId, cost * entries.length);
    const id = randomUUID();
    const answer = await this.watchlists.create(
      { id, accountId, name: body.name ?? null, interval: body.interval, callbackUrl: body.callback_url ?? null, group: this.group, idempotencyKeyId: keyId ?? null, nextCheckAt: this.clock.date() },
      entries,
      rejected.map((entry) => storedFormHash(this.hashKey, entry.phone)),
      await this.accounts.maxWatchedNumbers(accountId),
      (watchlist, erased): WatchlistCreatedDto => ({
        id,
        name: watchlist.name,
        total: watchlist.total,
        interval: watchlist.interval,
        next_check_at: watchlist.nextCheckAt.toISOString(),
        cost_per_round: cost * watchlist.total,
        // A form of a number erased while this creation ran is not echoed (docs/privacy.md, "Erasure").
        rejected: rejected.filter((_, index) => !erased.has(index)),
      }),
    );
    this.worker.wake();
    return answer;
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
      entries: page.rows.map((e) => ({
        phone: e.phone,
        reference: e.reference,
        result: e.result,
        answered_by: e.result ? showProvenance(e.answeredBy) : null,
        error: e.error,
        checked_at: e.checkedAt?.toISOString() ?? null,
      })),
      next_cursor: page.nextCursor,
    };
  }

  async update(account: AuthenticatedAccount, id: string, body: UpdateWatchlistDto): Promise<WatchlistSummaryDto> {
    // Bad input is a 400 whatever the id (the contract's order: validation before lookups).
    if (Object.values(body).every((value) => value === undefined)) {
      // An empty PATCH is a client mistake (a field name misspelt is refused already), not a silent 200.
      throw new AppError('INVALID_REQUEST', `Nothing to change: send at least one of ${UPDATABLE_FIELDS.join(', ')}.`);
    }
    if (body.callback_url) requireCallbackUrl('callback_url', body.callback_url, this.callbackPolicy);
    const watchlist = await this.own(account, id);
    const lastRound = (await this.watchlists.lastRounds([watchlist.id])).get(watchlist.id);
    let status: Watchlist['status'] | undefined;
    let next: Date | undefined;
    if (body.paused === true) status = 'paused';
    if (body.paused === false && watchlist.status !== 'active') {
      status = 'active';
      // A round refused for credits or by the daily cap runs as soon as it is resumed; a paused schedule picks up where it was.
      const refused = watchlist.status === 'paused_insufficient_credits' || watchlist.status === 'paused_spending_limit';
      if (refused && !watchlist.roundRunning) next = this.clock.date();
    }
    if (body.interval && body.interval !== watchlist.interval && !next) {
      next = new Date(Math.max(this.clock.now(), nextCheckAt(lastRound?.startedAt ?? watchlist.createdAt, body.interval).getTime()));
    }
    if (body.add) {
      const { entries, rejected } = parseEntries(body.add, undefined, this.hashKey);
      if (rejected.length > 0) throw new AppError('INVALID_REQUEST', `add[${rejected[0].index}]: ${E164_MESSAGE}`);
      await this.watchlists.addEntries(account.accountId, watchlist.id, entries, await this.accounts.maxWatchedNumbers(account.accountId));
    }
    if (status === 'paused' && watchlist.status === 'active') await this.stopRound(account.accountId, watchlist.id, 'pause');
    if (body.remove) await this.watchlists.removeEntries(watchlist.id, body.remove.map((phone) => normalizePhone(phone) ?? phone));
    const callbackUrl = body.callback_url;
    await this.txHost.withTransaction(async () => {
      await this.watchlists.update(account.accountId, watchlist.id, { name: body.name, interval: body.interval, callbackUrl, status, nextCheckAt: next });
      // Callbacks not yet delivered go where the watchlist now says (none: given up), as when the URL was read at
      // delivery; in the same transaction, so that no crash leaves them going to the old URL.
      if (callbackUrl !== undefined) await this.callbacks.retargetPending(account.accountId, watchlistKeyPrefix(watchlist.id), callbackUrl);
    });
    if (status === 'active') this.worker.wake();
    return summary((await this.own(account, id)), lastRound);
  }

  async remove(account: AuthenticatedAccount, id: string): Promise<void> {
    const watchlist = await this.own(account, id);
    // Entries charged for a running round and not checked yet are never checked now: refunded.
    await this.stopRound(account.accountId, watchlist.id, 'delete');
  }

  /** Starts a round now (same billing as a scheduled one); a round already running is answered as it is. */
  async checkNow(account: AuthenticatedAccount, id: string): Promise<RoundStartedDto> {
    const watchlist = await this.own(account, id);
    if (watchlist.status !== 'active') {
      throw new AppError('INVALID_REQUEST', `This watchlist is ${watchlist.status}: resume it with PATCH {"paused": false} first.`);
    }
    if (watchlist.roundRunning) {
      const { cost } = await this.settings.checksFor(account.accountId);
      return { id, round: watchlist.round, status: 'running', cost: cost * watchlist.total };
    }
    const { checks, cost } = await this.settings.requireChecks(account.accountId);
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
        phone: c.phone, reference: c.reference, field: c.field, before: c.before, after: c.after, answered_by: showOrigin(c.answeredBy), round: c.round,
        detected_at: c.detectedAt.toISOString(),
      })),
      next_cursor: page.nextCursor,
    };
  }

  /**
   * Pauses or deletes the watchlist and refunds what its running round charged and will never check,
   * in one transaction opened here (watchlists' rows and credits' refunds commit together). A deleted
   * watchlist's callbacks not yet delivered are given up with it.
   */
  private stopRound(accountId: string, watchlistId: string, how: 'pause' | 'delete'): Promise<void> {
    return this.txHost.withTransaction(async () => {
      const unchecked = how === 'pause' ? await this.watchlists.pause(accountId, watchlistId) : await this.watchlists.markDeleted(accountId, watchlistId);
      for (const chargeId of unchecked?.chargeIds ?? []) {
        await this.credits.refundPart(chargeId, unchecked!.cost, { reference: `refund:${chargeId}`, reason: unchecked!.reason });
      }
      if (how === 'delete' && unchecked) await this.callbacks.giveUpPending(accountId, watchlistKeyPrefix(watchlistId), 'the watchlist was deleted');
    });
  }


  private async requireBalance(accountId: string, needed: number): Promise<void> {
    const balance = await this.credits.balance(accountId);
    if (balance < needed) {
      throw new AppError('INSUFFICIENT_CREDITS', `A round of this watchlist costs ${creditCount(needed)} and your balance is ${balance}. Top up your balance to continue.`);
    }
  }

  /** Unknown, malformed, deleted and other accounts' ids all answer the same 404. */
  private async own(account: AuthenticatedAccount, id: string): Promise<Watchlist> {
    const watchlist = (await isUuid(id)) ? await this.watchlists.find(account.accountId, id.toLowerCase()) : undefined;
    if (!watchlist) throw new AppError('NOT_FOUND', 'No watchlist with this id.');
    return watchlist;
  }
}

/** Entries that pass the E.164 rule, each number once (its first reference kept), and those that do not. */
function parseEntries(phones: string[], references: string[] | undefined, key: HashKey): { entries: NewEntry[]; rejected: RejectedEntryDto[] } {
  const entries = new Map<string, NewEntry>();
  const rejected: RejectedEntryDto[] = [];
  phones.forEach((raw, index) => {
    const phone = normalizePhone(raw);
    if (!phone) rejected.push({ index, phone: raw, code: 'INVALID_REQUEST', message: E164_MESSAGE });
    else if (!entries.has(phone)) entries.set(phone, { phone, hash: keyedHash(key, phone), reference: references?.[index] ?? null });
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
