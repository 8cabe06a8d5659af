import { BeforeApplicationShutdown, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import PgBoss from 'pg-boss';
import { DataSource, type EntityManager } from 'typeorm';
import { underSchemaLock } from '../database/database-runtime';
import { asRows } from '../database/query-rows';
import { shutdownStep } from '../common/shutdown-steps';
import { AppConfig } from '../config/app-config';
import { ChunkLease, ChunkLeases } from './chunk-leases';
import type { LapsedLease } from './chunk-leases.repository';

export interface ChunkTask {
  jobId: string;
  chunk: number;
}

export interface WebhookTask {
  jobId: string;
}

/**
 * The durable queue (pg-boss, in the service's own Postgres): chunks of bulk jobs and their
 * completion callbacks. Every instance works the same queues, so the work is shared; a chunk whose
 * worker died is handed out again once its lease lapses (ChunkLeases), or at the latest at its
 * expiration, by pg-boss's maintenance (on any instance).
 *
 * Started in onModuleInit so it is ready before any onApplicationBootstrap starts workers, and
 * stopped in beforeApplicationShutdown, while the database pool is still open: running chunks are
 * told to stop (`stopping`), write what they have and hand the rest back to the queue.
 */
@Injectable()
export class BulkQueue implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger(BulkQueue.name);
  private readonly boss: PgBoss;
  private readonly settings: AppConfig['bulk'];
  readonly chunkQueue: string;
  /** Where pg-boss moves a chunk that failed BULK_CHUNK_RETRIES times more (its dead-letter queue). */
  readonly givenUpQueue: string;
  readonly webhookQueue: string;
  private workerIds: string[] = [];
  private shuttingDown = false;
  /** Running chunks get half the shutdown's time to write what they have. */
  private readonly stopTimeoutMs: number;

  constructor(
    config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly leases: ChunkLeases,
  ) {
    this.settings = config.bulk;
    this.stopTimeoutMs = Math.max(1000, Math.min(15_000, Math.round(config.shutdownTimeoutMs / 2)));
    this.chunkQueue = config.bulk.queueName;
    this.givenUpQueue = `${config.bulk.queueName}-given-up`;
    this.webhookQueue = `${config.bulk.queueName}-webhooks`;
    this.boss = new PgBoss({
      connectionString: config.database.url,
      schema: config.bulk.queueSchema,
      application_name: 'phone-filter-queue',
      // A connection for every worker (the chunk workers, the given-up and the webhook worker) and two
      // for maintenance and sends. With fewer, a worker can be left waiting in the pool's queue at
      // shutdown, when pg-pool ends without ever answering it: pg-boss then waits for that worker
      // forever (a 1 s polling loop that keeps the process alive).
      max: config.bulk.parallelChunks + 4,
      supervise: true,
      maintenanceIntervalSeconds: config.bulk.maintenanceIntervalSeconds,
      schedule: false,
    });
    this.boss.on('error', (error: Error) => this.logger.warn(`Queue: ${error.message}`));
  }

  /** True once the service is shutting down: a chunk in progress should stop taking new numbers. */
  get stopping(): boolean {
    return this.shuttingDown;
  }

  async onModuleInit(): Promise<void> {
    await underSchemaLock(this.dataSource, async () => {
      await this.boss.start();
      // Before any chunk names it as its dead letter (a foreign key in pg-boss's tables).
      await this.boss.createQueue(this.givenUpQueue);
      await this.boss.createQueue(this.chunkQueue);
      await this.boss.createQueue(this.webhookQueue);
    });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    // Graceful: waits for the handlers running now (a chunk stops early, see `stopping`), then fails
    // what is still active so that another instance picks it up at once.
    await shutdownStep('the bulk queue', () => this.boss.stop({ graceful: true, timeout: this.stopTimeoutMs, wait: true }));
    await this.leases.stop();
  }

  /** The chunk jobs of a new bulk job, inserted inside the caller's transaction: they exist iff the job does. */
  async enqueueChunksWithin(transaction: EntityManager, jobId: string, chunks: number): Promise<void> {
    const db: PgBoss.Db = { executeSql: async (text, values) => ({ rows: asRows(await transaction.query(text, values)) }) };
    const jobs: PgBoss.JobInsert<ChunkTask>[] = Array.from({ length: chunks }, (_, chunk) => ({
      name: this.chunkQueue,
      data: { jobId, chunk },
      ...this.chunkOptions(),
    }));
    await this.boss.insert(jobs, { db });
  }

  /** A chunk that yielded (its time slice ran out) goes back to the queue for the rest of its numbers. */
  async enqueueChunk(task: ChunkTask): Promise<void> {
    await this.boss.send(this.chunkQueue, task, this.chunkOptions());
  }

  /**
   * The completion callback of a job. Its queue id is the job id, so enqueuing it again (a finisher
   * retried after a crash) adds nothing while the first is kept.
   */
  async enqueueWebhook(jobId: string): Promise<void> {
    const { retries, retryDelaySeconds, timeoutMs } = this.settings.webhook;
    await this.boss.send(this.webhookQueue, { jobId } satisfies WebhookTask, {
      id: jobId,
      retryLimit: retries,
      retryDelay: retryDelaySeconds,
      retryBackoff: true,
      expireInSeconds: Math.max(2, Math.ceil((timeoutMs * 2) / 1000)),
    });
  }

  /**
   * Starts this instance's workers: BULK_PARALLEL_CHUNKS chunk workers, one for the chunks given up
   * and one webhook worker.
   */
  async work(handlers: {
    chunk: (task: ChunkTask, lease: ChunkLease) => Promise<void>;
    givenUp: (task: ChunkTask) => Promise<void>;
    webhook: (task: WebhookTask) => Promise<void>;
  }): Promise<void> {
    const options = { batchSize: 1, pollingIntervalSeconds: this.settings.pollIntervalSeconds };
    for (let i = 0; i < this.settings.parallelChunks; i++) {
      this.workerIds.push(
        await this.boss.work<ChunkTask>(this.chunkQueue, options, ([job]) => this.leases.hold(this.chunkQueue, job.id, (lease) => handlers.chunk(job.data, lease))),
      );
    }
    this.leases.start((lease) => this.handOutAgain(lease));
    this.workerIds.push(await this.boss.work<ChunkTask>(this.givenUpQueue, options, ([job]) => handlers.givenUp(job.data)));
    this.workerIds.push(await this.boss.work<WebhookTask>(this.webhookQueue, options, ([job]) => handlers.webhook(job.data)));
  }

  /**
   * The chunk of a dead worker goes back to the queue now (as a failed attempt, retried after 1 s),
   * unless the queue job is no longer that worker's run: finished, handed out already, or started
   * again after the lease's last renewal (a new run, whose own lease is not taken yet).
   */
  private async handOutAgain({ queueName, queueJobId, renewedAt }: LapsedLease): Promise<void> {
    const job = await this.boss.getJobById(queueName, queueJobId);
    if (job?.state !== 'active' || (job.startedOn && job.startedOn > renewedAt)) return;
    await this.boss.fail(queueName, queueJobId, { message: `its worker stopped renewing its lease for ${this.settings.chunkLeaseSeconds} s` });
    this.logger.warn(`Chunk ${JSON.stringify(job.data)} of a dead worker handed out again (lease lapsed)`);
  }

  /** Wakes this instance's idle workers now rather than at their next poll (a job was just submitted here). */
  wakeWorkers(): void {
    for (const id of this.workerIds) this.boss.notifyWorker(id);
  }

  /**
   * A chunk that stopped (shutdown, crash, database error) is retried promptly, BULK_CHUNK_RETRIES
   * times (1,000 by default: a quarter of an hour of failures). Then pg-boss moves it to the
   * given-up queue, whose worker answers what is left of it PROVIDER_UNAVAILABLE and refunds it, so
   * that no job stays `processing` with its credits reserved forever. (A chunk given back at
   * shutdown counts as an attempt too; a thousand restarts in a row would be needed to give it up.)
   */
  private chunkOptions(): { expireInSeconds: number; retryLimit: number; retryDelay: number; retryBackoff: boolean; deadLetter: string } {
    return {
      expireInSeconds: this.settings.chunkTimeoutSeconds,
      retryLimit: this.settings.chunkRetries,
      retryDelay: 1,
      retryBackoff: false,
      deadLetter: this.givenUpQueue,
    };
  }

  /** How long a chunk may run before it should yield, well inside its expiration. */
  get chunkSliceMs(): number {
    return (this.settings.chunkTimeoutSeconds * 1000) / 2;
  }
}
