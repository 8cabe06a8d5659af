import { BeforeApplicationShutdown, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import PgBoss from 'pg-boss';
import { DataSource } from 'typeorm';
import { joinedTransaction, TransactionHost, type TypeOrmTx } from '../database/transactions';
import { underSchemaLock } from '../database/database-runtime';
import { asRows } from '../database/query-rows';
import { shutdownStep } from '../common/shutdown-steps';
import { AppConfig } from '../config/app-config';
import { ChunkLease, ChunkLeases } from './chunk-leases';
import type { LapsedLease } from './chunk-leases.repository';

export interface ChunkTask {
  jobId: string;
  chunk: number;
  /** Whose job: the queue's fairness counts each account's chunks waiting (absent on chunks queued before it). */
  accountId?: string;
}

/**
 * The durable queue (pg-boss, in the service's own Postgres): chunks of bulk jobs (their completion
 * callbacks go through the outbox of webhooks/). Every instance works the same queues, so the work is shared; a chunk whose
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
  private readonly bulkConfig: AppConfig['bulk'];
  readonly chunkQueue: string;
  /** Where pg-boss moves a chunk that failed BULK_CHUNK_RETRIES times more (its dead-letter queue). */
  readonly givenUpQueue: string;
  private workerIds: string[] = [];
  private shuttingDown = false;
  /** Running chunks get half the shutdown's time to write what they have. */
  private readonly stopTimeoutMs: number;

  constructor(
    config: AppConfig,
    private readonly dataSource: DataSource,
    private readonly leases: ChunkLeases,
    private readonly txHost: TransactionHost<TypeOrmTx>,
  ) {
    this.bulkConfig = config.bulk;
    this.stopTimeoutMs = Math.max(1000, Math.min(15_000, Math.round(config.shutdownTimeoutMs / 2)));
    this.chunkQueue = config.bulk.queueName;
    this.givenUpQueue = `${config.bulk.queueName}-given-up`;
    this.boss = new PgBoss({
      connectionString: config.database.url,
      schema: config.bulk.queueSchema,
      application_name: 'phone-filter-queue',
      // A connection for every worker (the chunk workers and the given-up worker), one spare, and two
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
    });
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.shuttingDown = true;
    // Graceful: waits for the handlers running now (a chunk stops early, see `stopping`), then fails
    // what is still active so that another instance picks it up at once.
    await shutdownStep('the bulk queue', () => this.boss.stop({ graceful: true, timeout: this.stopTimeoutMs, wait: true }));
    await this.leases.stop();
  }

  /**
   * The chunk jobs of a new bulk job, inserted inside the caller's transaction: they exist iff the job
   * does. Fair between accounts: workers take the highest priority first (then the oldest), and a
   * chunk's priority is minus its place in its account's line (the chunks of the account waiting
   * already, then its own index). The first chunk of an account with nothing waiting goes ahead of the
   * hundredth of another's backlog: one account's large jobs never hold a small job of another behind
   * them, and two accounts' backlogs are worked in turn, round robin.
   */
  async enqueueChunks(jobId: string, chunks: number, accountId: string): Promise<void> {
    const transaction = joinedTransaction(this.txHost);
    const db: PgBoss.Db = { executeSql: async (text, values) => ({ rows: asRows(await transaction.query(text, values)) }) };
    const waiting = await this.chunksWaiting(db, accountId);
    const jobs: PgBoss.JobInsert<ChunkTask>[] = Array.from({ length: chunks }, (_, chunk) => ({
      name: this.chunkQueue,
      data: { jobId, chunk, accountId },
      priority: -(waiting + chunk),
      ...this.chunkOptions(),
    }));
    await this.boss.insert(jobs, { db });
  }

  /** A chunk that yielded (its time slice ran out) goes back to the queue for the rest of its numbers, at the end of its account's line. */
  async enqueueChunk(task: ChunkTask): Promise<void> {
    const priority = task.accountId === undefined ? 0 : -(await this.chunksWaiting(this.boss.getDb(), task.accountId));
    await this.boss.send(this.chunkQueue, task, { ...this.chunkOptions(), priority });
  }

  /** The account's chunks in the queue not taken by a worker yet. */
  private async chunksWaiting(db: PgBoss.Db, accountId: string): Promise<number> {
    const { rows } = await db.executeSql(
      `SELECT count(*)::int AS n FROM ${this.bulkConfig.queueSchema}.job WHERE name = $1 AND state < 'active' AND data->>'accountId' = $2`,
      [this.chunkQueue, accountId],
    );
    return Number((rows[0] as { n: number }).n);
  }

  /**
   * Starts this instance's workers: BULK_PARALLEL_CHUNKS chunk workers and one for the chunks given up.
   */
  async work(handlers: {
    chunk: (task: ChunkTask, lease: ChunkLease) => Promise<void>;
    givenUp: (task: ChunkTask) => Promise<void>;
  }): Promise<void> {
    const options = { batchSize: 1, pollingIntervalSeconds: this.bulkConfig.pollIntervalSeconds };
    for (let i = 0; i < this.bulkConfig.parallelChunks; i++) {
      this.workerIds.push(
        await this.boss.work<ChunkTask>(this.chunkQueue, options, ([job]) => this.leases.hold(this.chunkQueue, job.id, (lease) => handlers.chunk(job.data, lease))),
      );
    }
    this.leases.start((lease) => this.handOutAgain(lease), { queueSchema: this.bulkConfig.queueSchema, queueName: this.chunkQueue });
    this.workerIds.push(await this.boss.work<ChunkTask>(this.givenUpQueue, options, ([job]) => handlers.givenUp(job.data)));
  }

  /**
   * The chunk of a dead worker goes back to the queue now (as a failed attempt, retried after 1 s),
   * unless the queue job is no longer that worker's run: finished, handed out already, or started
   * again after the lease's last renewal (a new run, whose own lease is not taken yet).
   */
  private async handOutAgain({ queueName, queueJobId, renewedAt }: LapsedLease): Promise<void> {
    const job = await this.boss.getJobById(queueName, queueJobId);
    if (job?.state !== 'active' || (job.startedOn && job.startedOn > renewedAt)) return;
    await this.boss.fail(queueName, queueJobId, { message: `its worker stopped renewing its lease for ${this.bulkConfig.chunkLeaseSeconds} s` });
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
      expireInSeconds: this.bulkConfig.chunkTimeoutSeconds,
      retryLimit: this.bulkConfig.chunkRetries,
      retryDelay: 1,
      retryBackoff: false,
      deadLetter: this.givenUpQueue,
    };
  }

  /** How long a chunk may run before it should yield, well inside its expiration. */
  get chunkSliceMs(): number {
    return (this.bulkConfig.chunkTimeoutSeconds * 1000) / 2;
  }
}
