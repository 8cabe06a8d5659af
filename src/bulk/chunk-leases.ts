import { Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Clock } from '../common/clock';
import { Scheduler } from '../common/scheduler';
import { AppConfig } from '../config/app-config';
import { ChunkLeasesRepository, LapsedLease } from './chunk-leases.repository';

/** Renewals (and looks for lapsed leases) per lease period: a lease survives a few lost renewals. */
const CHECKS_PER_LEASE = 5;

/**
 * Leases of the chunks this instance works, one holder per run of a chunk (this instance's id and a
 * token of the run), so two workers of one instance never share one. While a chunk runs, its lease is renewed every
 * BULK_CHUNK_LEASE_SECONDS / 5; every instance looks as often for leases nobody renewed for
 * BULK_CHUNK_LEASE_SECONDS, whose worker died (kill -9, a lost machine), and hands their chunks out
 * again at once rather than at their expiration (BULK_CHUNK_TIMEOUT_SECONDS, the last resort). A
 * worker alive but too slow to renew (a long pause, the database away) learns at its next renewal
 * that its lease is gone and stops taking numbers (`lost`). A chunk run twice costs lookups, never
 * money: answers are written once and the job was charged at submission.
 */

/** The lease of one run of a chunk, as its worker sees it. */
export interface ChunkLease {
  /** Another instance took the chunk back: the worker stops taking numbers. */
  readonly lost: boolean;
}

interface HeldLease {
  holder: string;
  lost: boolean;
}

/** What one look did: leases renewed, leases found taken back, chunks with no lease adopted, lapsed chunks handed out. */
export interface LeaseLook {
  renewed: number;
  lost: number;
  adopted: number;
  handedOut: number;
}

/** Where the chunks with no lease are looked for: the queue's job table and the chunks' queue. */
export interface OrphansOf {
  queueSchema: string;
  queueName: string;
}

@Injectable()
export class ChunkLeases {
  /** The lease look's job: renewals, the adoption of chunks with no lease, and the hand-out of lapsed ones. */
  static readonly JOB = 'bulk-chunk-leases';
  private readonly logger = new Logger(ChunkLeases.name);
  private readonly instance = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly held = new Map<string, HeldLease>();
  private readonly leaseMs: number;
  /** Chunks with no lease are looked for once a lease period (it scans the queue's jobs): the first look does. */
  private nextOrphanLookAt = 0;
  private looking: Promise<LeaseLook> | undefined;
  private stopped = false;

  constructor(
    private readonly leases: ChunkLeasesRepository,
    config: AppConfig,
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
  ) {
    this.leaseMs = config.bulk.chunkLeaseSeconds * 1000;
  }

  /**
   * Schedules the lease look (`look`) every fifth of a lease: it renews this instance's leases and hands
   * out the chunks of lapsed ones with `handOut`; with `orphansOf`, also those of the queue's active jobs
   * that have no lease (their worker died before it took the lease, or after it released it but before
   * the queue marked the job done), once a lease period.
   */
  start(handOut: (lease: LapsedLease) => Promise<void>, orphansOf?: OrphansOf): void {
    this.scheduler.every({ name: ChunkLeases.JOB, everyMs: this.leaseMs / CHECKS_PER_LEASE }, () => this.look(handOut, orphansOf));
  }

  /** No look runs after this (the queue has stopped its workers); resolves when the running one has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.looking?.catch(() => undefined);
  }

  /** Runs `work` under a lease of its own for queue job `queueJobId`, released when it ends, however it ends. */
  async hold<T>(queueName: string, queueJobId: string, work: (lease: ChunkLease) => Promise<T>): Promise<T> {
    const lease: HeldLease = { holder: `${this.instance}:${randomBytes(4).toString('hex')}`, lost: false };
    await this.leases.take(queueJobId, queueName, lease.holder, this.clock.date());
    this.held.set(queueJobId, lease);
    try {
      return await work(lease);
    } finally {
      // Only this run's entry: a new run of the same queue job on this instance (this one's lease was taken back) keeps its own.
      if (this.held.get(queueJobId) === lease) this.held.delete(queueJobId);
      await this.leases.release(queueJobId, lease.holder).catch(() => undefined); // a leftover lapses, and its job is no longer active
    }
  }

  /**
   * One lease look (the job's step): renews this instance's leases, adopts the chunks with no lease once
   * a lease period, and hands out the chunks whose lease nobody renewed for BULK_CHUNK_LEASE_SECONDS by
   * the clock. The database away, it does what it can and says so in the debug log; the next look tries again.
   */
  look(handOut: (lease: LapsedLease) => Promise<void>, orphansOf?: OrphansOf): Promise<LeaseLook> {
    if (this.stopped) return Promise.resolve({ renewed: 0, lost: 0, adopted: 0, handedOut: 0 });
    const looking = this.lookOnce(handOut, orphansOf).finally(() => {
      if (this.looking === looking) this.looking = undefined;
    });
    this.looking = looking;
    return looking;
  }

  private async lookOnce(handOut: (lease: LapsedLease) => Promise<void>, orphansOf?: OrphansOf): Promise<LeaseLook> {
    const done: LeaseLook = { renewed: 0, lost: 0, adopted: 0, handedOut: 0 };
    try {
      Object.assign(done, await this.renew());
      if (orphansOf && this.clock.now() >= this.nextOrphanLookAt) {
        this.nextOrphanLookAt = this.clock.now() + this.leaseMs;
        // Apart: a failed look for chunks with no lease must not stop the lapsed leases' hand-out.
        done.adopted = await this.leases.adoptOrphans(orphansOf.queueSchema, orphansOf.queueName, this.clock.inMs(-this.leaseMs)).catch((error: Error) => {
          this.logger.warn(`chunks with no lease not looked for: ${error.message}`);
          return 0;
        });
      }
      for (const lease of await this.leases.claimLapsed(this.clock.inMs(-this.leaseMs))) {
        try {
          await handOut(lease);
          done.handedOut += 1;
        } catch (error) {
          await this.leases.restore(lease).catch(() => undefined);
          throw error;
        }
      }
    } catch (error) {
      // The database is away: nobody can renew or hand out; the next look tries again.
      this.logger.debug(`chunk leases not renewed or checked: ${(error as Error).message}`);
    }
    return done;
  }

  private async renew(): Promise<{ renewed: number; lost: number }> {
    const held = [...this.held.entries()];
    if (held.length === 0) return { renewed: 0, lost: 0 };
    const kept = new Set(await this.leases.renew(held.map(([queueJobId, { holder }]) => ({ queueJobId, holder })), this.clock.date()));
    let lost = 0;
    for (const [queueJobId, lease] of held) {
      if (kept.has(queueJobId) || lease.lost || this.held.get(queueJobId) !== lease) continue;
      lease.lost = true;
      lost += 1;
      this.logger.warn(`The lease of queue job ${queueJobId} lapsed and was taken back while its worker ran: the worker stops`);
    }
    return { renewed: kept.size, lost };
  }
}
