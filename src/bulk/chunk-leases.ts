import { Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
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
@Injectable()
export class ChunkLeases {
  private readonly logger = new Logger(ChunkLeases.name);
  private readonly instance = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly held = new Map<string, HeldLease>();
  private readonly leaseSeconds: number;
  private timer: NodeJS.Timeout | undefined;
  /** Ticks since start: chunks with no lease are looked for once a lease period (it scans the queue's jobs). */
  private ticks = 0;
  private ticking: Promise<void> | undefined;

  constructor(
    private readonly leases: ChunkLeasesRepository,
    config: AppConfig,
  ) {
    this.leaseSeconds = config.bulk.chunkLeaseSeconds;
  }

  /**
   * Starts renewing this instance's leases and handing out the chunks of lapsed ones with `handOut`;
   * with `orphansOf`, also those of the queue's active jobs that have no lease (their worker died before
   * it took the lease, or after it released it but before the queue marked the job done), once a lease period.
   */
  start(handOut: (lease: LapsedLease) => Promise<void>, orphansOf?: { queueSchema: string; queueName: string }): void {
    const everyMs = (this.leaseSeconds * 1000) / CHECKS_PER_LEASE;
    this.timer = setInterval(() => {
      this.ticking ??= this.tick(handOut, orphansOf).finally(() => (this.ticking = undefined));
    }, everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.ticking;
  }

  /** Runs `work` under a lease of its own for queue job `queueJobId`, released when it ends, however it ends. */
  async hold<T>(queueName: string, queueJobId: string, work: (lease: ChunkLease) => Promise<T>): Promise<T> {
    const lease: HeldLease = { holder: `${this.instance}:${randomBytes(4).toString('hex')}`, lost: false };
    await this.leases.take(queueJobId, queueName, lease.holder);
    this.held.set(queueJobId, lease);
    try {
      return await work(lease);
    } finally {
      // Only this run's entry: a new run of the same queue job on this instance (this one's lease was taken back) keeps its own.
      if (this.held.get(queueJobId) === lease) this.held.delete(queueJobId);
      await this.leases.release(queueJobId, lease.holder).catch(() => undefined); // a leftover lapses, and its job is no longer active
    }
  }

  private async tick(handOut: (lease: LapsedLease) => Promise<void>, orphansOf?: { queueSchema: string; queueName: string }): Promise<void> {
    try {
      await this.renew();
      if (orphansOf && this.ticks++ % CHECKS_PER_LEASE === 0) {
        // Apart: a failed look for chunks with no lease must not stop the lapsed leases' hand-out.
        await this.leases.adoptOrphans(orphansOf.queueSchema, orphansOf.queueName, this.leaseSeconds).catch((error: Error) => {
          this.logger.warn(`chunks with no lease not looked for: ${error.message}`);
        });
      }
      for (const lease of await this.leases.claimLapsed(this.leaseSeconds)) {
        try {
          await handOut(lease);
        } catch (error) {
          await this.leases.restore(lease).catch(() => undefined);
          throw error;
        }
      }
    } catch (error) {
      // The database is away: nobody can renew or hand out; the next tick tries again.
      this.logger.debug(`chunk leases not renewed or checked: ${(error as Error).message}`);
    }
  }

  private async renew(): Promise<void> {
    const held = [...this.held.entries()];
    if (held.length === 0) return;
    const kept = new Set(await this.leases.renew(held.map(([queueJobId, { holder }]) => ({ queueJobId, holder }))));
    for (const [queueJobId, lease] of held) {
      if (kept.has(queueJobId) || lease.lost || this.held.get(queueJobId) !== lease) continue;
      lease.lost = true;
      this.logger.warn(`The lease of queue job ${queueJobId} lapsed and was taken back while its worker ran: the worker stops`);
    }
  }
}
