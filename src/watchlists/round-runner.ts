import { Injectable, Logger } from '@nestjs/common';
import { anyCheckEnabled, EnabledChecks } from '../checks/checks';
import { ConcurrencyLimit } from '../common/concurrency-limit';
import { AppError } from '../common/errors';
import { maskPhone } from '../common/phone';
import { AppConfig } from '../config/app-config';
import { CreditsService } from '../credits/credits.service';
import { LookupService } from '../provider/lookup.service';
import { SettingsService } from '../settings/settings.service';
import { ClaimedWatchlist, PendingEntry, RoundOutcome, RoundsRepository } from './rounds.repository';
import { changesBetween, nextCheckAt, roundChargeReference, roundSource } from './watch-rules';

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
  private readonly settings: AppConfig['watchlists'];
  private stopping = false;

  constructor(
    private readonly rounds: RoundsRepository,
    private readonly accountSettings: SettingsService,
    private readonly credits: CreditsService,
    private readonly lookups: LookupService,
    config: AppConfig,
  ) {
    this.settings = config.watchlists;
    this.limit = new ConcurrencyLimit(config.watchlists.concurrency);
  }

  /** Rounds in progress stop at their next chunk and hand their lease back. */
  stop(): void {
    this.stopping = true;
  }

  async run(claimed: ClaimedWatchlist): Promise<void> {
    let { round, checks, cost } = claimed;
    if (!claimed.running) {
      const started = await this.start(claimed);
      if (!started) return;
      ({ round, checks, cost } = started);
    }
    await this.work(claimed, round, checks!, cost!);
  }

  /**
   * Starts the due round with the account's checks of now, unless the balance cannot cover it: then
   * it is not started and the watchlist pauses (`paused_insufficient_credits`).
   */
  private async start(claimed: ClaimedWatchlist): Promise<{ round: number; checks: EnabledChecks; cost: number } | undefined> {
    const { checks, cost } = await this.accountSettings.checksFor(claimed.accountId);
    if (!anyCheckEnabled(checks)) {
      this.logger.warn(`Watchlist ${claimed.id}: no check is enabled, the round is skipped`);
      await this.rounds.skipRound(claimed.id, nextCheckAt(new Date(), claimed.interval));
      return undefined;
    }
    const needed = cost * (await this.rounds.watchedCount(claimed.id));
    if ((await this.credits.balance(claimed.accountId)) < needed) {
      await this.rounds.pauseForCredits(claimed.id, claimed.round + 1);
      return undefined;
    }
    const round = await this.rounds.startRound(claimed.id, checks, cost, 'schedule');
    if (round === undefined) {
      await this.rounds.releaseLease(claimed.id);
      return undefined;
    }
    return { round, checks, cost };
  }

  /**
   * Passes over the round's pending entries in id order, CHUNKS_IN_FLIGHT chunks at a time (while one
   * chunk writes, the next one's lookups keep the concurrency busy). A pass that found nothing pending
   * from the first entry ends the round; another pass picks up what a pass skipped.
   */
  private async work(claimed: ClaimedWatchlist, round: number, checks: EnabledChecks, cost: number): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    let refused = false;
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
        return this.rounds.pauseForCredits(claimed.id, round);
      }
      if (inFlight.size >= CHUNKS_IN_FLIGHT) {
        await Promise.race(inFlight);
        continue;
      }
      if (this.stopping || !(await this.rounds.renewLease(claimed.id, round, this.settings.leaseSeconds))) {
        await settle();
        return this.rounds.releaseLease(claimed.id);
      }
      const pending = await this.rounds.pendingEntries(claimed.id, round, afterId, this.settings.chunkSize);
      if (pending.length === 0) {
        await settle();
        if (failure !== undefined || refused) continue;
        if (afterId === '0') return this.rounds.finishRound(claimed.id, round, claimed.interval);
        // Entries another run held: look again shortly rather than spin.
        if (!progressedThisPass) await new Promise((resolve) => setTimeout(resolve, 200));
        afterId = '0';
        progressedThisPass = false;
        continue;
      }
      afterId = pending[pending.length - 1].id;
      progressedThisPass = true;
      const chunk: Promise<void> = this.chunk(claimed, round, checks, cost, pending)
        .then((short) => void (refused ||= short))
        .catch((error: unknown) => void (failure ??= error))
        .finally(() => inFlight.delete(chunk));
      inFlight.add(chunk);
    }
  }

  /** Charges, looks up and records one chunk; true when the balance refused some of it. */
  private async chunk(claimed: ClaimedWatchlist, round: number, checks: EnabledChecks, cost: number, pending: PendingEntry[]): Promise<boolean> {
    const refused = await this.charge(claimed, round, cost, pending);
    const paid = pending.filter((entry) => entry.chargeId !== null);
    if (paid.length > 0) await this.checkAndRecord(claimed.id, round, checks, cost, paid);
    return refused;
  }

  /** Charges the entries not yet charged for the round (their chargeId is set); true when the balance refused some. */
  private async charge(claimed: ClaimedWatchlist, round: number, cost: number, pending: PendingEntry[]): Promise<boolean> {
    const unpaid = pending.filter((entry) => entry.chargeId === null);
    if (unpaid.length === 0) return false;
    const source = roundSource(claimed.id, round);
    const charged = await this.rounds.chargeEntries(round, unpaid.map((entry) => entry.id), async (transaction, entries) => {
      const calls = entries.map((entry) => ({ reference: roundChargeReference(claimed.id, round, entry.id), phone: maskPhone(entry.phone), source }));
      const written = await this.credits.chargeEachWithin(transaction, claimed.accountId, cost, calls);
      return new Map(entries.flatMap((entry, i) => (written.has(calls[i].reference) ? [[entry.id, written.get(calls[i].reference)!.id]] : [])));
    });
    for (const entry of unpaid) entry.chargeId = charged.get(entry.id) ?? null;
    // Entries another run charged meanwhile are not refused: they are picked up again at the next chunk.
    return charged.size < unpaid.length && (await this.credits.balance(claimed.accountId)) < cost;
  }

  private async checkAndRecord(watchlistId: string, round: number, checks: EnabledChecks, cost: number, paid: PendingEntry[]): Promise<void> {
    const outcome: RoundOutcome = { answered: [], failed: [] };
    await Promise.all(
      paid.map((entry) =>
        this.limit.run(async () => {
          try {
            const result = await this.lookups.check(entry.phone, checks, { maxAgeSeconds: 0, lane: 'bulk' });
            outcome.answered.push({ id: entry.id, result, changes: changesBetween(entry.lastResult, result) });
          } catch (error) {
            if (!(error instanceof AppError)) throw error;
            outcome.failed.push(entry.id);
          }
        }),
      ),
    );
    await this.rounds.recordOutcome(watchlistId, round, outcome, async (transaction, chargeId) => {
      await this.credits.refundPart(chargeId, cost, { reference: `refund:${chargeId}`, reason: 'PROVIDER_UNAVAILABLE' }, transaction);
    });
  }
}
