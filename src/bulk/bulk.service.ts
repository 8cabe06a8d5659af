import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { HashKey, requestHash, RequestHash } from '../common/keyed-hash';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { CheckRegistry } from '../checks/check-registry';
import { RISK_VERDICT } from '../checks/priced-calls';
import type { EnabledChecks } from '../checks/checks';
import { csvCells, csvHeader } from '../checks/csv-layout';
import { showProvenance } from '../checks/provenance';
import { keysetPage } from '../common/keyset-page';
import type { Caller } from '../common/caller';
import { AppError } from '../common/errors';
import { isUuid } from '../common/uuid';
import { E164_MESSAGE } from '../common/phone';
import { AppConfig } from '../config/app-config';
import { storedFormHash } from '../common/number-hash';
import { CreditsService } from '../credits/credits.service';
import { TransactionHost, type TypeOrmTx } from '../database/transactions';
import { SettingsService } from '../settings/settings.service';
import { BulkPrivacyService } from './bulk-privacy.service';
import { BulkJob, BulkJobsRepository, IdempotencyKeyTaken } from './bulk-jobs.repository';
import { type CallbackAddressPolicy, requireCallbackUrl } from '../common/callback-address';
import { BulkQueue } from './bulk-queue';
import { toCsv } from './csv';
import { BulkAcceptedDto, BulkEntriesDeletedDto, BulkEntryDto, BulkJobDto, BulkJobPageDto, BulkJobSummaryDto, BulkQuoteDto, BulkRequestDto } from './dto/bulk.dto';
import { toEntryInput } from './entry-input';
import { JobPlan, planJob } from './plan';

/** A submission's answer, and whether it is the job an earlier request with the same Idempotency-Key created. */
export interface BulkSubmission {
  job: BulkAcceptedDto;
  replayed: boolean;
}


export const NOTHING_BILLABLE =
  'No entry of this job is a phone number in E.164 format (e.g. +14155552671): there is nothing to look up. ' +
  'Nothing was created or charged; send at least one valid number.';

/** Seconds a client is told to wait before asking for the results of a job still running again. */
export const RESULTS_RETRY_AFTER_SECONDS = 2;

@Injectable()
export class BulkService {
  private readonly chunkSize: number;
  private readonly callbackPolicy: CallbackAddressPolicy;
  private readonly hashKey: HashKey;

  constructor(
    private readonly jobs: BulkJobsRepository,
    private readonly queue: BulkQueue,
    private readonly settings: SettingsService,
    private readonly credits: CreditsService,
    private readonly registry: CheckRegistry,
    private readonly txHost: TransactionHost<TypeOrmTx>,
    private readonly privacy: BulkPrivacyService,
    config: AppConfig,
  ) {
    this.chunkSize = config.bulk.chunkSize;
    this.callbackPolicy = config.callbacks;
    this.hashKey = config.dataHashKey;
  }

  /**
   * Settings (400 when no check is enabled; 400 when no entry is a number to look up), then the job with its whole cost reserved, its entries
   * and its queue chunks in one transaction (402, and nothing written, when the balance is short).
   */
  async submit(account: AuthenticatedAccount, request: BulkRequestDto, idempotencyKey?: string, caller?: Caller): Promise<BulkSubmission> {
    // Only a keyed submission is recognised again: the body is hashed for it alone.
    const keyed = idempotencyKey === undefined ? null : { key: idempotencyKey, hash: bulkRequestHash(request, this.hashKey) };
    const idempotency = keyed && { key: keyed.key, requestHash: keyed.hash.keyed };
    if (keyed) {
      const earlier = await this.jobs.findByIdempotencyKey(account.accountId, keyed.key);
      if (earlier) return replay(earlier, keyed.hash);
    }
    const { plan, checks, cost } = await this.prepare(account, request);
    // A job of invalid numbers only costs nothing, so no balance would ever stop them: each would store
    // its entries for good and (with callback_url) queue deliveries, for free and without end (review #7).
    if (plan.validCount === 0) throw new AppError('INVALID_REQUEST', NOTHING_BILLABLE);
    const id = randomUUID();
    const source = request.source ?? 'internal';
    const amount = plan.validCount * cost;
    const newJob = {
      id,
      accountId: account.accountId,
      entries: plan.entries,
      // What an erasure finds each stored form by (docs/privacy.md): '' for a form holding no number.
      phoneHashes: plan.entries.map((entry) => storedFormHash(this.hashKey, entry.phone) ?? ''),
      chargedEntries: plan.validCount,
      costPerEntry: cost,
      checks,
      csvLayout: { ...this.registry.csvLayout(checks), risk: request.risk === true },
      riskVerdict: request.risk === true,
      source,
      callbackUrl: request.callback_url ?? null,
      chunks: plan.chunks,
      invalidMessage: `${E164_MESSAGE}. Not charged.`,
      maxAgeSeconds: request.max_age ?? null,
      idempotency,
    };
    // One transaction opened here and joined by bulk's, credits' and the queue's statements.
    const creating = this.txHost.withTransaction(async () => {
      await this.jobs.guardNumberWrites();
      if (idempotency) await this.jobs.lockIdempotencyKey(account.accountId, idempotency.key);
      const reservation =
        amount === 0
          ? null
          : await this.credits.reserve(account.accountId, amount, { reference: `bulk:${id}:reserve`, source, reason: `bulk job ${id}: ${plan.validCount} entries × ${cost}` }, caller);
      const created = await this.jobs.insert(newJob, reservation?.id ?? null);
      await this.queue.enqueueChunks(id, plan.chunks, account.accountId);
      return created;
    });
    let job: BulkJob;
    try {
      job = await creating;
    } catch (error) {
      // A twin request with the same key committed its job first: this one wrote (and reserved) nothing.
      if (!(error instanceof IdempotencyKeyTaken) || !keyed) throw error;
      return replay((await this.jobs.findByIdempotencyKey(account.accountId, keyed.key))!, keyed.hash);
    }
    this.queue.wakeWorkers();
    return { job: { id: job.id, status: 'queued', total: job.total, cost: job.cost }, replayed: false };
  }

  /** What `submit` would reserve for the same body, against the balance and today's spending limit; writes nothing. */
  async quote(account: AuthenticatedAccount, request: BulkRequestDto): Promise<BulkQuoteDto> {
    const { plan, cost } = await this.prepare(account, request);
    const amount = plan.validCount * cost;
    const { balance, sufficient } = await this.credits.affordable(account.accountId, amount);
    return { total: plan.entries.length, billable: plan.validCount, invalid: plan.entries.length - plan.validCount, cost: amount, balance, sufficient };
  }

  /**
   * The checks of submit and quote alike: the callback address, at least one check enabled; then the plan,
   * and the cost of one billable entry: its checks, plus the risk verdict's price with `risk: true`.
   */
  private async prepare(account: AuthenticatedAccount, request: BulkRequestDto): Promise<{ plan: JobPlan; checks: EnabledChecks; cost: number }> {
    requireCallbackUrl('callback_url', request.callback_url, this.callbackPolicy);
    const { checks, cost } = await this.settings.requireChecks(account.accountId);
    const verdictPrice = request.risk === true ? this.registry.callPrice(RISK_VERDICT) : 0;
    return { plan: planJob(request.phones, this.chunkSize), checks, cost: cost + verdictPrice };
  }

  async get(account: AuthenticatedAccount, id: string): Promise<BulkJobDto> {
    const job = await this.ownJob(account, id);
    const entries = await this.jobs.entries(job.id, job.status !== 'completed');
    const refunded = await this.credits.refundedOf(job.reservationId ? [job.reservationId] : []);
    return {
      ...summary(job, refunded),
      results: entries.map((entry): BulkEntryDto => ({
        phone: entry.phone,
        ...(entry.reference === null ? {} : { reference: entry.reference }),
        ...(entry.result ? { result: entry.result, answered_by: showProvenance(entry.answeredBy), ...(entry.risk ? { risk: entry.risk } : {}) } : { error: entry.error! }),
      })),
    };
  }

  async list(account: AuthenticatedAccount, limit: number, cursor: string | undefined): Promise<BulkJobPageDto> {
    const page = await keysetPage('bj', limit, cursor, (rows, beforeSeq) => this.jobs.page(account.accountId, rows, beforeSeq), (job) => job.seq);
    const refunded = await this.credits.refundedOf(page.rows.flatMap((job) => (job.reservationId ? [job.reservationId] : [])));
    return { jobs: page.rows.map((job) => summary(job, refunded)), next_cursor: page.nextCursor };
  }

  /** The results of a completed job as CSV; 409 NOT_READY with Retry-After until it has completed (the message says how far it is). */
  async csv(account: AuthenticatedAccount, id: string): Promise<string> {
    const job = await this.ownJob(account, id);
    if (job.status !== 'completed') {
      throw new AppError(
        'NOT_READY',
        `The results of bulk job ${job.id} are not ready: it is ${job.status} (${job.processed} of ${job.total} entries answered). ` +
          `Retry after ${RESULTS_RETRY_AFTER_SECONDS} s (Retry-After), or poll GET /api/v1/filter/bulk/{id} until its status is completed.`,
        { 'Retry-After': String(RESULTS_RETRY_AFTER_SECONDS) },
      );
    }
    const entries = await this.jobs.entries(job.id, false);
    // The columns the job was given when submitted: a check registered or turned on since adds none.
    return toCsv(csvHeader(job.csvLayout), entries.map((entry) => csvCells(job.csvLayout, entry)));
  }

  /** The customer deletes a completed job's entries early (docs/privacy.md); the job, its counts and charges stay. */
  async deleteEntries(account: AuthenticatedAccount, id: string): Promise<BulkEntriesDeletedDto> {
    const job = await this.ownJob(account, id);
    return { id: job.id, deleted_entries: await this.privacy.deleteEntries(account.accountId, job.id, job.status) };
  }

  /** Unknown, malformed and other accounts' ids all answer the same 404. */
  private async ownJob(account: AuthenticatedAccount, id: string): Promise<BulkJob> {
    const job = (await isUuid(id)) ? await this.jobs.findForAccount(account.accountId, id.toLowerCase()) : undefined;
    if (!job) throw new AppError('NOT_FOUND', 'No bulk job with this id.');
    return job;
  }
}

/** `refunded`: what credits/ says was refunded of each reservation (the bulk module does not read the ledger). */
function summary(job: BulkJob, refunded: Map<string, number>): BulkJobSummaryDto {
  return {
    id: job.id,
    status: job.status,
    total: job.total,
    processed: job.processed,
    // The contract names the reservation twice: `cost` (reserved at submission) and `charged` (what
    // the job was charged). They are one ledger row, so one value; what came back is `refunded`.
    cost: job.cost,
    charged: job.cost,
    refunded: (job.reservationId && refunded.get(job.reservationId)) || 0,
    created_at: job.createdAt.toISOString(),
    completed_at: job.completedAt?.toISOString() ?? null,
  };
}

/**
 * The request as a retry would send it again, whichever way it came (JSON, or CSV with query
 * parameters): entries as `{ phone, reference }`, then the options. Stored as a keyed hash
 * (docs/privacy.md); jobs created before the upgrade stored its unkeyed hash, which still matches.
 */
function bulkRequestHash(request: BulkRequestDto, key: HashKey): RequestHash {
  const canonical = {
    entries: request.phones.map(toEntryInput).map(({ phone, reference }) => [phone, reference ?? null]),
    source: request.source ?? null,
    callback_url: request.callback_url ?? null,
    max_age: request.max_age ?? null,
    // Only when asked: a request without it hashes as it did before the option existed.
    ...(request.risk === true ? { risk: true } : {}),
  };
  return requestHash(canonical, key);
}

/** The job an Idempotency-Key already made, for the same request; 409 for another one. */
function replay(job: BulkJob, hash: RequestHash): BulkSubmission {
  if (job.requestHash === null || !hash.matches(job.requestHash)) {
    throw new AppError('IDEMPOTENCY_CONFLICT', `This Idempotency-Key already created bulk job ${job.id} with a different request.`);
  }
  return { job: { id: job.id, status: job.status, total: job.total, cost: job.cost }, replayed: true };
}

