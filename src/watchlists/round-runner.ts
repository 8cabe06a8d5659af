import { Injectable, Logger } from '@nestjs/common';
import { AccountsService } from '../accounts/accounts.service';
import { CheckRegistry } from '../checks/check-registry';
import type { CheckOptions } from '../checks/check-definition';
import type { EnabledChecks } from '../checks/checks';
import { provenanceOf } from '../checks/provenance';
import { Clock, ClockTimer } from '../common/clock';
import { ConcurrencyLimit } from '../common/concurrency-limit';
import { AppError } from '../common/errors';
import { maskPhone } from '../common/phone';
import { AppConfig } from '../config/app-config';
import type { ChargeRefusal } from '../credits/credits.repository';
import { CreditsService } from '../credits/credits.service';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';
import { LookupService } from '../provider/lookup.service';
import { WatchlistCallbacks } from './watchlist-callbacks';
import { SettingsService } from '../settings/settings.service';
import { ClaimedWatchlist, LeaseLostError, PendingEntry, RoundLease, RoundOutcome, RoundsRepository } from './rounds.repository';
import { nextCheckAt, roundChargeReference, roundSource, WatchRules } from './watch-rules';

/** Chunks of one round in progress at once: one writing while the next one's lookups run. */
const CHUNKS_IN_FLIGHT = 2;

/**
 * Runs one round of a watchlist this instance holds the lease of, chunk by chunk: charge the chunk
 * (one statement, marked on the entries in the same transaction), look the numbers up live, write
 * the answers, changes and refunds (one transaction). Every step skips what an earlier run of the
 * same round did, so a round resumed after a crash checks and charges each number once.
 */
@Injectable()
export class RoundRunner {
  private readonly logger = new Logger(RoundRunner.name);
  private readonly limit: ConcurrencyLimit;
  private readonly watchlistConfig: AppConfig['watchlists'];
  private readonly watchRules: WatchRules;
  private stopping = false;

  constructor(
    private readonly rounds: RoundsRepository,
    private readonly accounts: AccountsService,
    private readonly accountSettings: SettingsService,
    private readonly credits: CreditsService,
    private readonly lookups: LookupService,
    private readonly callbacks: WatchlistCallbacks,
    private readonly txHost: TransactionHost<TypeOrmTx>,
    private readonly registry: CheckRegistry,
    private readonly clock: Clock,
    config: AppConfig,
  ) {
    this.watchRules = new WatchRules(registry);
    this.watchlistConfig = config.watchlists;
    this.limit = new ConcurrencyLimit(config.watchlists.concurrency);
  }

  /** Rounds in progress stop at their next chunk and hand their lease back. */
  stop(): void {
    this.stopping = true;
  }

  async run(claimed: ClaimedWatchlist): Promise<void> {
    // A disabled account's customer cannot pause or delete its watchlists (401): nothing runs or is
    // charged until it is enabled again. The claim's lease is kept, so the watchlist is looked at
    // again only once it lapses (WATCHLIST_LEASE_SECONDS), not at every poll.
    if ((await this.accounts.get(claimed.accountId)).disabled) return;
    let { round, checks, cost } = claimed;
    if (!claimed.running) {
      const started = await this.start(claimed);
      if (!started) return;
      ({ round, checks, cost } = started);
    }
    await this.underLease(claimed, { watchlistId: claimed.id, round, leaseOwner: claimed.leaseOwner }, checks!, cost!);
  }

  /**
   * Runs the round while renewing its lease a third of the lease after the last renewal began, by the
   * Clock, whatever a chunk's lookups take. When a renewal fails (paused, deleted, or the lease ran out
   * and another worker claimed it), no lookup starts any more and the round's writes are refused (LeaseLostError).
   */
  private async underLease(claimed: ClaimedWatchlist, lease: RoundLease, checks: EnabledChecks, cost: number): Promise<void> {
    const state = { lost: false };
    let ended = false;
    let renewing: Promise<void> = Promise.resolve();
    let timer: ClockTimer | undefined;
    const renewLater = () => {
      timer = this.clock.timer((this.watchlistConfig.leaseSeconds * 1000) / 3, () => {
        renewing = renewing.then(async () => {
          const held = await this.rounds.renewLease(lease.watchlistId, lease.round, lease.leaseOwner, this.watchlistConfig.leaseSeconds).catch(() => false);
          if (!held) state.lost = true;
        });
        if (!ended) renewLater();
      });
    };
    renewLater();
    try {
      await this.work(claimed, lease, checks, cost, state);
    } catch (error) {
      if (!(error instanceof LeaseLostError)) throw error;
      this.logger.warn(error.message);
    } finally {
      ended = true;
      timer?.cancel();
      await renewing;
    }
  }

  /**
   * Starts the due round with the account's checks of now, unless the balance or what today's daily
   * spending cap leaves cannot cover it: then it is not started and the watchlist pauses
   * (`paused_insufficient_credits`, or `paused_spending_limit` until the next 00:00 UTC).
   */
  private async start(claimed: ClaimedWatchlist): Promise<{ round: number; checks: EnabledChecks; cost: number } | undefined> {
    const { checks, cost } = await this.accountSettings.checksFor(claimed.accountId);
    if (this.registry.enabled(checks).length === 0) {
      this.logger.warn(`Watchlist ${claimed.id}: no check is enabled, the round is skipped`);
      await this.rounds.skipRound(claimed.id, claimed.leaseOwner, nextCheckAt(this.clock.date(), claimed.interval));
      return undefined;
    }
    const needed = cost * (await this.rounds.watchedCount(claimed.id));
    const { refusedBy } = await this.credits.affordable(claimed.accountId, needed);
    if (refusedBy) {
      await this.pauseRefused(claimed, claimed.leaseOwner, claimed.round + 1, refusedBy);
      return undefined;
    }
    const round = await this.rounds.startRound(claimed.id, checks, cost, 'schedule', claimed.leaseOwner);
    if (round === undefined) {
      await this.rounds.releaseLease(claimed.id, claimed.leaseOwner);
      return undefined;
    }
    return { round, checks, cost };
  }

  /**
   * Passes over the round's pending entries in id order, CHUNKS_IN_FLIGHT chunks at a time (while one
   * chunk writes, the next one's lookups keep the concurrency busy). A pass that found nothing pending
   * from the first entry ends the round; another pass picks up what a pass skipped.
   */
  private async work(claimed: ClaimedWatchlist, lease: RoundLease, checks: EnabledChecks, cost: number, state: { lost: boolean }): Promise<void> {
    const { round } = lease;
    const inFlight = new Set<Promise<void>>();
    let refused: ChargeRefusal | null = null;
    let failure: unknown;
    let afterId = '0';
    let progressedThisPass = false;
    const settle = () => Promise.all(inFlight);
    for (;;) {
      if (failure !== undefined) {
        await settle();
        throw failure;
      }
      if (refused) {
        await settle();
        return this.pauseRefused(claimed, lease.leaseOwner, round, refused);
      }
      if (inFlight.size >= CHUNKS_IN_FLIGHT) {
        await Promise.race(inFlight);
        continue;
      }
      if (this.stopping || state.lost) {
        await settle();
        return this.rounds.releaseLease(claimed.id, lease.leaseOwner);
      }
      // Disabled while its round runs: nothing more is charged (as in run(); the lease lapses, enabled again the round resumes).
      if ((await this.accounts.get(claimed.accountId)).disabled) {
        await settle();
        return;
      }
      const pending = await this.rounds.pendingEntries(claimed.id, round, afterId, this.watchlistConfig.chunkSize);
      if (pending.length === 0) {
        await settle();
        if (failure !== undefined || refused) continue;
        if (afterId === '0') return this.finishRound(claimed, lease);
        // Entries another run held: look again shortly rather than spin.
        if (!progressedThisPass) await this.clock.sleep(200);
        afterId = '0';
        progressedThisPass = false;
        continue;
      }
      afterId = pending[pending.length - 1].id;
      progressedThisPass = true;
      const chunk: Promise<void> = this.chunk(claimed, lease, checks, cost, pending, state)
        .then((short) => void (refused ??= short))
        .catch((error: unknown) => void (failure ??= error))
        .finally(() => inFlight.delete(chunk));
      inFlight.add(chunk);
    }
  }

  /** Charges, looks up and records one chunk; says why some of it was refused (null: none was). */
  private async chunk(
    claimed: ClaimedWatchlist,
    lease: RoundLease,
    checks: EnabledChecks,
    cost: number,
    pending: PendingEntry[],
    state: { lost: boolean },
  ): Promise<ChargeRefusal | null> {
    const refused = await this.charge(claimed, lease, cost, pending);
    const paid = pending.filter((entry) => entry.chargeId !== null);
    // The account's option values of now (the SIM swap window): asked with them, compared as answered.
    if (paid.length > 0) await this.checkAndRecord(lease, checks, cost, (await this.accountSettings.checksFor(claimed.accountId)).options, paid, state);
    return refused;
  }

  /**
   * Charges the entries not yet charged for the round (their chargeId is set); says why the charge
   * statement refused some (the balance or the daily cap), null when it refused none. Entries another
   * run holds are not refused: they are picked up again at the next pass.
   */
  private async charge(claimed: ClaimedWatchlist, lease: RoundLease, cost: number, pending: PendingEntry[]): Promise<ChargeRefusal | null> {
    const { round } = lease;
    const unpaid = pending.filter((entry) => entry.chargeId === null);
    if (unpaid.length === 0) return null;
    const source = roundSource(claimed.id, round);
    let refusedBy: ChargeRefusal | null = null;
    // One transaction: an entry is marked charged iff its charge exists.
    const charged = await this.txHost.withTransaction(async () => {
      const entries = await this.rounds.lockUncharged(lease, unpaid.map((entry) => entry.id));
      if (entries.length === 0) return new Map<string, string>();
      const calls = entries.map((entry) => ({ reference: roundChargeReference(claimed.id, round, entry.id), phone: maskPhone(entry.phone), source }));
      const outcome = await this.credits.chargeEachWithin(claimed.accountId, cost, calls);
      refusedBy = outcome.refusedBy;
      const { written } = outcome;
      const byEntry = new Map(entries.flatMap((entry, i) => (written.has(calls[i].reference) ? [[entry.id, written.get(calls[i].reference)!.id]] : [])));
      await this.rounds.markCharged(round, byEntry);
      return byEntry;
    });
    for (const entry of unpaid) entry.chargeId = charged.get(entry.id) ?? null;
    return refusedBy;
  }

  private async checkAndRecord(
    lease: RoundLease,
    checks: EnabledChecks,
    cost: number,
    checkOptions: CheckOptions,
    paid: PendingEntry[],
    state: { lost: boolean },
  ): Promise<void> {
    const outcome: RoundOutcome = { answered: [], failed: [] };
    await Promise.all(
      paid.map((entry) =>
        this.limit.run(async () => {
          // The lease is gone: another worker may be looking this number up now.
          if (state.lost) return;
          try {
            const report = await this.lookups.lookUp(entry.phone, checks, { maxAgeSeconds: 0, lane: 'batch', checkOptions });
            const result = this.registry.toReportedAnswer(report);
            const answeredBy = provenanceOf(report.answers);
            // Each change carries the origin of its new value: the provider and time of the check that produced the field.
            const changes = this.watchRules
              .changesBetween(entry.last, { result, checks })
              .map((change) => ({ ...change, answeredBy: answeredBy?.[this.registry.suppliedBy(change.field, report) ?? ''] ?? null }));
            outcome.answered.push({ id: entry.id, result, answeredBy, changes });
          } catch (error) {
            if (!(error instanceof AppError)) throw error;
            outcome.failed.push(entry.id);
          }
        }),
      ),
    );
    if (state.lost) throw new LeaseLostError(lease.watchlistId);
    // One transaction: the answers, the changes and the refunds of the failures commit together.
    await this.txHost.withTransaction(async () => {
      const failedCharges = await this.rounds.recordOutcome(lease, checks, outcome);
      for (const chargeId of failedCharges) {
        await this.credits.refundPart(chargeId, cost, { reference: `refund:${chargeId}`, reason: 'PROVIDER_UNAVAILABLE' });
      }
    });
  }

  /** Ends the round and, when it found changes and a callback_url is set, records its callback: one transaction. */
  private finishRound(claimed: ClaimedWatchlist, lease: RoundLease): Promise<void> {
    return this.txHost.withTransaction(async () => {
      const finished = await this.rounds.finishRound(lease, claimed.interval);
      if (finished?.callbackUrl && finished.changes > 0) await this.callbacks.changes(claimed.accountId, lease.watchlistId, lease.round, finished.callbackUrl);
    });
  }

  /** Pauses the watchlist the charge was refused for and records its `watchlist.paused` callback: one transaction. */
  private pauseRefused(claimed: ClaimedWatchlist, leaseOwner: string, round: number, refusedBy: ChargeRefusal): Promise<void> {
    return this.txHost.withTransaction(async () => {
      const paused = await this.rounds.pauseRefused(claimed.id, leaseOwner, refusedBy);
      if (paused?.callbackUrl) await this.callbacks.paused(claimed.accountId, claimed.id, round, paused.seq, paused.status, paused.callbackUrl);
    });
  }
}
