import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AuthenticatedAccount } from '../auth/authenticated-account';
import { anyCheckEnabled, NO_CHECK_ENABLED } from '../checks/checks';
import { keysetPage } from '../common/keyset-page';
import { AppError } from '../common/errors';
import { E164_MESSAGE } from '../common/phone';
import { AppConfig } from '../config/app-config';
import { CreditsService } from '../credits/credits.service';
import { SettingsService } from '../settings/settings.service';
import { BulkJob, BulkJobsRepository } from './bulk-jobs.repository';
import { refusedCallbackUrl } from '../webhooks/callback-address';
import { BulkQueue } from './bulk-queue';
import { CsvValue, toCsv } from './csv';
import { BulkAcceptedDto, BulkEntryDto, BulkJobDto, BulkJobPageDto, BulkJobSummaryDto, BulkRequestDto } from './dto/bulk.dto';
import { planJob } from './plan';

export const CSV_COLUMNS = ['phone', 'country', 'valid', 'status', 'carrier', 'line_type', 'is_ported', 'error_code', 'error_message'] as const;

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
  async submit(account: AuthenticatedAccount, request: BulkRequestDto): Promise<BulkAcceptedDto> {
    const refused = request.callback_url === undefined ? undefined : refusedCallbackUrl(request.callback_url, this.allowPrivateCallbacks);
    if (refused) throw new AppError('INVALID_REQUEST', `callback_url must point to a public address: ${refused}.`);
    const { checks, cost } = await this.settings.checksFor(account.accountId);
    if (!anyCheckEnabled(checks)) throw new AppError('INVALID_REQUEST', NO_CHECK_ENABLED);
    const plan = planJob(request.phones, this.chunkSize);
    const id = randomUUID();
    const source = request.source ?? 'internal';
    const amount = plan.validCount * cost;
    const job = await this.jobs.create(
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
    this.queue.wakeWorkers();
    return { id: job.id, status: 'queued', total: job.total, cost: job.cost };
  }

  async get(account: AuthenticatedAccount, id: string): Promise<BulkJobDto> {
    const job = await this.ownJob(account, id);
    const entries = await this.jobs.entries(job.id, job.status !== 'completed');
    return {
      id: job.id,
      status: job.status,
      total: job.total,
      processed: job.processed,
      created_at: job.createdAt.toISOString(),
      completed_at: job.completedAt?.toISOString() ?? null,
      results: entries.map((entry): BulkEntryDto => (entry.result ? { phone: entry.phone, result: entry.result } : { phone: entry.phone, error: entry.error! })),
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
      return [entry.phone, r?.country, r?.valid, r?.status, r?.carrier, r?.line_type, r?.is_ported, entry.error?.code, entry.error?.message];
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
    created_at: job.createdAt.toISOString(),
    completed_at: job.completedAt?.toISOString() ?? null,
  };
}

