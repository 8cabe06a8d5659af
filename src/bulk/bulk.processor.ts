import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { Clock } from '../common/clock';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { CreditsService } from '../credits/credits.service';
import { LookupService } from '../provider/lookup.service';
import { CheckRegistry, type NumberReport } from '../checks/check-registry';
import type { CheckOptions } from '../checks/check-definition';
import type { EnabledChecks } from '../checks/checks';
import { provenanceOf } from '../checks/provenance';
import { SettingsService } from '../settings/settings.service';
import { AnswerWriter } from './answer-writer';
import { BulkJob, BulkJobsRepository, PhoneAnswer } from './bulk-jobs.repository';
import { BulkQueue, ChunkTask } from './bulk-queue';
import type { ChunkLease } from './chunk-leases';
import { EventsService } from '../webhooks/events.service';
import { ConcurrencyLimit } from '../common/concurrency-limit';
import { RiskVerdicts } from '../risk/risk-verdicts';

export const ENTRY_LOOKUP_FAILED =
  'The lookup network did not answer for this number. Its credits were refunded; submit it again later.';

export const ENTRY_VERDICT_FAILED =
  'The risk counters could not be reached, so no risk verdict was made for this number. Its credits were refunded; submit it again later.';

export const ENTRY_GIVEN_UP =
  'This number could not be processed: its part of the job failed every attempt. Its credits were refunded; submit it again later.';

const WRITE_BATCH_SIZE = 100;
/** How long the first answer of a batch waits for the batch to fill before it is written anyway. */
const WRITE_WINDOW_MS = 250;

type ChunkOutcome = 'done' | 'yielded' | 'stopping' | 'lost';

/** A number answered, with the checks' answers themselves (what a risk verdict reads before the cache). */
type LookedUp = Extract<PhoneAnswer, { result: unknown }> & { answers: NumberReport['answers'] };

/**
 * Works the queue on this instance: looks up a chunk's pending numbers through LookupService.lookUp
 * (cache + single flight), at most BULK_CONCURRENCY at once on this instance, writes answers in
 * batches, and finishes the job when its last entry is answered. Every step can run again after a
 * crash without effect: answered entries are skipped, the refund and the callback are keyed by the
 * job.
 */
@Injectable()
export class BulkProcessor implements OnApplicationBootstrap {
  private readonly logger = new Logger(BulkProcessor.name);
  private readonly limit: ConcurrencyLimit;

  constructor(
    private readonly jobs: BulkJobsRepository,
    private readonly queue: BulkQueue,
    private readonly lookups: LookupService,
    private readonly credits: CreditsService,
    private readonly accountSettings: SettingsService,
    private readonly events: EventsService,
    private readonly registry: CheckRegistry,
    private readonly verdicts: RiskVerdicts,
    private readonly clock: Clock,
    config: AppConfig,
  ) {
    this.limit = new ConcurrencyLimit(config.bulk.concurrency);
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.queue.work({
      chunk: (task, lease) => this.processChunk(task, lease),
      givenUp: (task) => this.giveUpChunk(task),
    });
  }

  async processChunk({ jobId, chunk }: ChunkTask, lease: ChunkLease = { lost: false }): Promise<void> {
    const job = await this.jobs.find(jobId);
    if (!job) return; // the account (and its jobs) was deleted
    if (job.status !== 'completed') {
      await this.jobs.markProcessing(jobId);
      const outcome = await this.lookUp(job, await this.jobs.pendingPhones(jobId, chunk), lease);
      // Thrown, so that pg-boss fails the job and it is retried (here or on another instance).
      if (outcome === 'stopping') throw new Error(`shutting down: the rest of chunk ${chunk} of bulk job ${jobId} goes back to the queue`);
      if (outcome === 'yielded') return this.queue.enqueueChunk({ jobId, chunk, accountId: job.accountId });
      // Failed rather than completed: should the queue job already run again elsewhere, a failure only
      // costs that run a retry, where a completion would end it with entries unanswered.
      if (outcome === 'lost') throw new Error(`chunk ${chunk} of bulk job ${jobId} was taken back (its lease lapsed): this run stops`);
    }
    await this.finish(job);
  }

  /**
   * A chunk that failed every attempt (BULK_CHUNK_RETRIES): its numbers still without an answer are
   * answered PROVIDER_UNAVAILABLE, which `finish` refunds, and the job completes like any other.
   * Idempotent, like the rest: retried by the queue if the database is still away.
   */
  async giveUpChunk({ jobId, chunk }: ChunkTask): Promise<void> {
    const job = await this.jobs.find(jobId);
    if (!job) return;
    if (job.status !== 'completed') {
      const phones = await this.jobs.pendingPhones(jobId, chunk);
      const written = await this.jobs.recordAnswers(
        jobId,
        phones.map((phone) => ({ phone, error: { code: 'PROVIDER_UNAVAILABLE', message: ENTRY_GIVEN_UP } })),
      );
      if (written > 0) this.logger.error(`Bulk job ${jobId}: chunk ${chunk} failed every attempt; ${written} entries answered PROVIDER_UNAVAILABLE and refunded`);
    }
    await this.finish(job);
  }

  /**
   * Answers the numbers, each once whatever its number of entries. Stops taking new numbers when
   * the service shuts down, when the chunk's time slice (half its queue expiration) is used, so a
   * chunk never outlives its expiration, or when its lease was taken back (the worker failed to renew
   * it for BULK_CHUNK_LEASE_SECONDS and another instance handed the chunk out again: from then until
   * this worker's next renewal, up to a fifth of the lease, both runs may look numbers up; the answers
   * are written once).
   */
  private async lookUp(job: BulkJob, phones: string[], lease: ChunkLease): Promise<ChunkOutcome> {
    const writer = new AnswerWriter((batch) => this.jobs.recordAnswers(job.id, batch), WRITE_BATCH_SIZE, WRITE_WINDOW_MS, this.clock);
    const sliceEnds = this.clock.now() + this.queue.chunkSliceMs;
    let outcome: ChunkOutcome = 'done';
    const checkOptions = await this.optionsOf(job.accountId);
    // The whole list, not only this chunk: runs are counted within the job (docs/sms-pumping.md "Bulk jobs").
    const list = job.riskVerdict && phones.length > 0 ? this.verdicts.listOf(await this.jobs.listNumbers(job.id)) : undefined;
    await Promise.all(
      phones.map((phone) =>
        this.limit.run(async () => {
          if (this.queue.stopping) outcome = 'stopping';
          else if (lease.lost) outcome = 'lost';
          else if (this.clock.now() > sliceEnds) outcome = outcome === 'done' ? 'yielded' : outcome;
          if (outcome !== 'done') return;
          const answer = await this.answer(phone, job.checks, job.maxAgeSeconds, checkOptions);
          writer.add(list && 'answers' in answer ? await this.withVerdict(job, answer, list) : answer);
        }),
      ),
    );
    await writer.close();
    return outcome;
  }

  /** The account's option values of its checks now (the SIM swap window); the defaults once the account is gone. */
  private async optionsOf(accountId: string): Promise<CheckOptions | undefined> {
    try {
      return (await this.accountSettings.checksFor(accountId)).options;
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') return undefined;
      throw error;
    }
  }

  private async answer(phone: string, checks: EnabledChecks, maxAgeSeconds: number | null, checkOptions: CheckOptions | undefined): Promise<LookedUp | Extract<PhoneAnswer, { error: unknown }>> {
    try {
      const report = await this.lookups.lookUp(phone, checks, { lane: 'batch', maxAgeSeconds: maxAgeSeconds ?? undefined, checkOptions });
      return { phone, result: this.registry.toReportedAnswer(report), answeredBy: provenanceOf(report.answers), answers: report.answers };
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'PROVIDER_UNAVAILABLE')) {
        this.logger.error(`Lookup in a bulk job failed unexpectedly (answered PROVIDER_UNAVAILABLE, refunded): ${(error as Error).stack}`);
      }
      return { phone, error: { code: 'PROVIDER_UNAVAILABLE', message: ENTRY_LOOKUP_FAILED } };
    }
  }

  /**
   * A looked-up entry of a job with `risk: true`, with its verdict (RiskVerdicts.ofListEntry: the job's
   * own answers, the counters read but not fed, the runs within the list). No verdict, no answer: the entry
   * fails SERVICE_UNAVAILABLE and is refunded whole, like a failed lookup.
   */
  private async withVerdict(job: BulkJob, answer: LookedUp, list: ReturnType<RiskVerdicts['listOf']>): Promise<PhoneAnswer> {
    const { phone, result, answeredBy, answers } = answer;
    try {
      const risk = await this.verdicts.ofListEntry(job.accountId, { e164: phone, source: job.source, answered: answers }, list);
      return { phone, result, answeredBy, risk };
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'SERVICE_UNAVAILABLE')) {
        this.logger.error(`Risk verdict in a bulk job failed unexpectedly (answered SERVICE_UNAVAILABLE, refunded): ${(error as Error).stack}`);
      }
      return { phone, error: { code: 'SERVICE_UNAVAILABLE', message: ENTRY_VERDICT_FAILED } };
    }
  }

  /**
   * Once every entry has its answer: refund the failed entries (one REFUND of the reservation,
   * exactly once), then mark the job completed (so a client that sees `completed` sees the final
   * balance), then record the callback in the outbox of webhooks/ (to callback_url, or as a
   * bulk.completed event to the account's webhook_url), which delivers it. Each step is idempotent, so any chunk may run it, as often as a crash makes it.
   */
  private async finish(job: BulkJob): Promise<void> {
    const { pending, failed } = await this.jobs.outcomeCounts(job.id);
    if (pending > 0) return;
    // An entry fails by its lookup or, in a job with `risk: true`, by its verdict: refunded whole either way.
    const failedEntries = `${failed} ${failed === 1 ? 'entry' : 'entries'} failed`;
    if (failed > 0 && job.reservationId) {
      await this.credits.refundPart(job.reservationId, failed * job.costPerEntry, {
        reference: `bulk:${job.id}:refund`,
        reason: `bulk job ${job.id}: ${failedEntries}`,
      });
    }
    const completedNow = await this.jobs.markCompleted(job.id);
    if (completedNow) this.logger.log(`Bulk job ${job.id} completed: ${job.total} entries, ${failedEntries}`);
    const completion = { id: job.id, status: 'completed', total: job.total };
    if (job.callbackUrl) await this.events.callback(job.accountId, 'bulk.completed', job.callbackUrl, completion, `bulk.callback:${job.id}`);
    else if (await this.accountSettings.webhookUrl(job.accountId)) await this.events.bulkCompleted(job.accountId, completion);
  }
}
