import { Injectable } from '@nestjs/common';
import { createHash, randomUUID } from 'node:crypto';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { anyCheckEnabled, EnabledChecks, NO_CHECK_ENABLED } from '../checks/checks';
import { keysetPage } from '../common/keyset-page';
import { AppError } from '../common/errors';
import { E164_MESSAGE } from '../common/phone';
import { AppConfig } from '../config/app-config';
import { CreditsService } from '../credits/credits.service';
import { SettingsService } from '../settings/settings.service';
import { BulkJob, BulkJobsRepository, IdempotencyKeyTaken } from './bulk-jobs.repository';
import { refusedCallbackUrl } from '../common/callback-address';
import { BulkQueue } from './bulk-queue';
import { CsvValue, toCsv } from './csv';
import { BulkAcceptedDto, BulkEntryDto, BulkJobDto, BulkJobPageDto, BulkJobSummaryDto, BulkQuoteDto, BulkRequestDto } from './dto/bulk.dto';
import { toEntryInput } from './entry-input';
import { JobPlan, planJob } from './plan';

/** A submission's answer, and whether it is the job an earlier request with the same Idempotency-Key created. */
export interface BulkSubmission {
  job: BulkAcceptedDto;
  replayed: boolean;
}

export const CSV_COLUMNS = ['phone', 'reference', 'country', 'valid', 'status', 'carrier', 'line_type', 'is_ported', 'error_code', 'error_message'] as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

@Injectable()
export class BulkService {
  private readonly chunkSize: number;
  private readonly allowPrivateCallbacks: boolean;

  constructor(
    private readonly jobs: BulkJobsRepository,
    private readonly queue: BulkQueue,
    private readonly settings: SettingsService,
    private readonly credits: CreditsService,
    config: AppConfig,
  ) {
    this.chunkSize = config.bulk.chunkSize;
    this.allowPrivateCallbacks = config.bulk.webhook.allowPrivateNetworks;
  }

  /**
   * Settings (400 when no check is enabled), then the job with its whole cost reserved, its entries
   * and its queue chunks in one transaction (402, and nothing written, when the balance is short).
   */
  async submit(account: AuthenticatedAccount, request: BulkRequestDto, idempotencyKey?: string): Promise<BulkSubmission> {
    const idempotency = idempotencyKey === undefined ? null : { key: idempotencyKey, requestHash: requestHash(request) };
    if (idempotency) {
      const earlier = await this.jobs.findByIdempotencyKey(account.accountId, idempotency.key);
      if (earlier) return replay(earlier, idempotency.requestHash);
    }
    const { plan, checks, cost } = await this.prepare(account, request);
    const id = randomUUID();
    const source = request.source ?? 'internal';
    const amount = plan.validCount * cost;
    const creating = this.jobs.create(
      {
        id,
        accountId: account.accountId,
        entries: plan.entries,
        chargedEntries: plan.validCount,
        costPerEntry: cost,
        checks,
        source,
        callbackUrl: request.callback_url ?? null,
        chunks: plan.chunks,
        invalidMessage: `${E164_MESSAGE}. Not charged.`,
        maxAgeSeconds: request.max_age ?? null,
        idempotency,
      },
      {
        reserve: async (transaction) => {
          if (amount === 0) return null;
          const reservation = await this.credits.reserve(transaction, account.accountId, amount, {
            reference: `bulk:${id}:reserve`,
            source,
            reason: `bulk job ${id}: ${plan.validCount} entries × ${cost}`,
          });
          return reservation.id;
        },
        enqueue: (transaction) => this.queue.enqueueChunksWithin(transaction, id, plan.chunks),
      },
    );
    let job: BulkJob;
    try {
      job = await creating;
    } catch (error) {
      // A twin request with the same key committed its job first: this one wrote (and reserved) nothing.
      if (!(error instanceof IdempotencyKeyTaken) || !idempotency) throw error;
      return replay((await this.jobs.findByIdempotencyKey(account.accountId, idempotency.key))!, idempotency.requestHash);
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

  /** The checks of submit and quote alike: the callback address, at least one check enabled; then the plan. */
  private async prepare(account: AuthenticatedAccount, request: BulkRequestDto): Promise<{ plan: JobPlan; checks: EnabledChecks; cost: number }> {
    const refused = request.callback_url === undefined ? undefined : refusedCallbackUrl(request.callback_url, this.allowPrivateCallbacks);
    if (refused) throw new AppError('INVALID_REQUEST', `callback_url must point to a public address: ${refused}.`);
    const { checks, cost } = await this.settings.checksFor(account.accountId);
    if (!anyCheckEnabled(checks)) throw new AppError('INVALID_REQUEST', NO_CHECK_ENABLED);
    return { plan: planJob(request.phones, this.chunkSize), checks, cost };
  }

  async get(account: AuthenticatedAccount, id: string): Promise<BulkJobDto> {
    const job = await this.ownJob(account, id);
    const entries = await this.jobs.entries(job.id, job.status !== 'completed');
    return {
      ...summary(job),
      results: entries.map((entry): BulkEntryDto => ({
        phone: entry.phone,
        ...(entry.reference === null ? {} : { reference: entry.reference }),
        ...(entry.result ? { result: entry.result } : { error: entry.error! }),
      })),
    };
  }

  async list(account: AuthenticatedAccount, limit: number, cursor: string | undefined): Promise<BulkJobPageDto> {
    const page = await keysetPage('bj', limit, cursor, (rows, beforeSeq) => this.jobs.page(account.accountId, rows, beforeSeq), (job) => job.seq);
    return { jobs: page.rows.map(summary), next_cursor: page.nextCursor };
  }

  /** The results of a completed job as CSV; 404 until it has completed (the message says so). */
  async csv(account: AuthenticatedAccount, id: string): Promise<string> {
    const job = await this.ownJob(account, id);
    if (job.status !== 'completed') {
      throw new AppError(
        'NOT_FOUND',
        `The results of bulk job ${job.id} are not ready: it is ${job.status} (${job.processed} of ${job.total} entries answered). ` +
          'Poll GET /api/v1/filter/bulk/{id} until its status is completed.',
      );
    }
    const entries = await this.jobs.entries(job.id, false);
    const rows = entries.map((entry): CsvValue[] => {
      const r = entry.result;
      return [entry.phone, entry.reference, r?.country, r?.valid, r?.status, r?.carrier, r?.line_type, r?.is_ported, entry.error?.code, entry.error?.message];
    });
    return toCsv(CSV_COLUMNS, rows);
  }

  /** Unknown, malformed and other accounts' ids all answer the same 404. */
  private async ownJob(account: AuthenticatedAccount, id: string): Promise<BulkJob> {
    const job = UUID.test(id) ? await this.jobs.findForAccount(account.accountId, id.toLowerCase()) : undefined;
    if (!job) throw new AppError('NOT_FOUND', 'No bulk job with this id.');
    return job;
  }
}

function summary(job: BulkJob): BulkJobSummaryDto {
  return {
    id: job.id,
    status: job.status,
    total: job.total,
    processed: job.processed,
    cost: job.cost,
    charged: job.cost,
    refunded: job.refunded,
    created_at: job.createdAt.toISOString(),
    completed_at: job.completedAt?.toISOString() ?? null,
  };
}

/**
 * The request as a retry would send it again, whichever way it came (JSON, or CSV with query
 * parameters): entries as `{ phone, reference }`, then the options.
 */
function requestHash(request: BulkRequestDto): string {
  const canonical = {
    entries: request.phones.map(toEntryInput).map(({ phone, reference }) => [phone, reference ?? null]),
    source: request.source ?? null,
    callback_url: request.callback_url ?? null,
    max_age: request.max_age ?? null,
  };
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex');
}

/** The job an Idempotency-Key already made, for the same request; 409 for another one. */
function replay(job: BulkJob, hash: string): BulkSubmission {
  if (job.requestHash !== hash) {
    throw new AppError('IDEMPOTENCY_CONFLICT', `This Idempotency-Key already created bulk job ${job.id} with a different request.`);
  }
  return { job: { id: job.id, status: job.status, total: job.total, cost: job.cost }, replayed: true };
}

