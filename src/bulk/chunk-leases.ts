import { Injectable, Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { AppConfig } from '../config/app-config';
import { ChunkLeasesRepository } from './chunk-leases.repository';

/** Renewals (and looks for lapsed leases) per lease period: a lease survives a few lost renewals. */
const CHECKS_PER_LEASE = 5;

/**
 * Leases of the chunks this instance works. While a chunk runs, its lease is renewed every
 * BULK_CHUNK_LEASE_SECONDS / 5; every instance looks as often for leases nobody renewed for
 * BULK_CHUNK_LEASE_SECONDS, whose worker died (kill -9, a lost machine), and hands their chunks out
 * again at once rather than at their expiration (BULK_CHUNK_TIMEOUT_SECONDS, the last resort). A
 * chunk run twice costs lookups, never money: answers are written once and the job was charged at
 * submission.
 */
@Injectable()
export class ChunkLeases {
  private readonly logger = new Logger(ChunkLeases.name);
  private readonly holder = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly held = new Set<string>();
  private readonly leaseSeconds: number;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;

  constructor(
    private readonly leases: ChunkLeasesRepository,
    config: AppConfig,
  ) {
    this.leaseSeconds = config.bulk.chunkLeaseSeconds;
  }

  /** Starts renewing this instance's leases and handing out the chunks of lapsed ones with `handOut`. */
  start(handOut: (queueName: string, queueJobId: string) => Promise<void>): void {
    const everyMs = (this.leaseSeconds * 1000) / CHECKS_PER_LEASE;
    this.timer = setInterval(() => {
      this.ticking ??= this.tick(handOut).finally(() => (this.ticking = undefined));
    }, everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.ticking;
  }

  /** Runs `work` under the lease of queue job `queueJobId`, released when it ends, however it ends. */
  async hold<T>(queueName: string, queueJobId: string, work: () => Promise<T>): Promise<T> {
    await this.leases.take(queueJobId, queueName, this.holder);
    this.held.add(queueJobId);
    try {
      return await work();
    } finally {
      this.held.delete(queueJobId);
      await this.leases.release(queueJobId, this.holder).catch(() => undefined); // a leftover lapses, and its job is no longer active
    }
  }

  private async tick(handOut: (queueName: string, queueJobId: string) => Promise<void>): Promise<void> {
    try {
      if (this.held.size > 0) await this.leases.renew([...this.held], this.holder);
      for (const lease of await this.leases.lapsed(this.leaseSeconds)) {
        await handOut(lease.queueName, lease.queueJobId);
        await this.leases.forgetLapsed(lease.queueJobId, this.leaseSeconds);
      }
    } catch (error) {
      // The database is away: nobody can renew or hand out; the next tick tries again.
      this.logger.debug(`chunk leases not renewed or checked: ${(error as Error).message}`);
    }
  }
}
