import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { PoolClient } from 'pg';
import { DataSource } from 'typeorm';
import { onFreshConnection } from './fresh-connection';
import { poolOf } from './pool';

/** How often the database is asked again while it is known to be unreachable, and how long each try may take. */
export const REPROBE_INTERVAL_MS = 1000;
const PROBE_TIMEOUT_MS = 2000;

/** Failures to open a connection that cost their wait: the database does not answer (blackholed, host gone). */
function isConnectFailure(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && ['ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH'].includes(code)) return true;
  // Not a refusal (ECONNREFUSED, 57P03 starting up): it fails at once already, and the next request may
  // well find the database back. Nor a reset (ECONNRESET): one connection broke, not the database.
  return typeof message === 'string' && /timeout exceeded when trying to connect|connection timeout/i.test(message);
}

/** What a request gets while the database is known to be unreachable: a connection failure (08006), answered 503. */
export class DatabaseUnreachableError extends Error {
  readonly code = '08006';
  constructor() {
    super('The database is unreachable (a connection to it failed just now); failing fast until it answers again.');
  }
}

type ConnectCallback = (error: Error | undefined, client?: PoolClient, done?: (release?: unknown) => void) => void;

/**
 * With PostgreSQL gone silent (blackholed), every request waited the pool's 5 s connect timeout before
 * its 503. Once a connection of the app's pool fails to open for that (no answer within the connect
 * timeout, host unreachable), the database is marked unreachable:
 * the pool then refuses to hand out connections at once (503 SERVICE_UNAVAILABLE without the wait,
 * nothing charged), and a fresh connection is tried outside the pool, at once and then every
 * REPROBE_INTERVAL_MS; the first that answers ends it. `refusedFast` and `outages` count it.
 */
@Injectable()
export class DatabaseReachability implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Database');
  private unreachableSince: number | undefined;
  private probing: NodeJS.Timeout | undefined;
  private closed = false;
  /** Connections refused at once while the database was known to be unreachable. */
  refusedFast = 0;
  outages = 0;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  get reachable(): boolean {
    return this.unreachableSince === undefined;
  }

  onApplicationBootstrap(): void {
    const pool = poolOf(this.db);
    if (!pool) return;
    const connect = pool.connect.bind(pool) as (callback?: ConnectCallback) => Promise<PoolClient> | undefined;
    (pool as unknown as { connect: (callback?: ConnectCallback) => Promise<PoolClient> | undefined }).connect = (callback?: ConnectCallback) => {
      if (!this.reachable) {
        this.refusedFast += 1;
        const error = new DatabaseUnreachableError();
        if (!callback) return Promise.reject(error);
        process.nextTick(() => callback(error));
        return undefined;
      }
      if (callback) {
        return connect((error, client, done) => {
          if (error && isConnectFailure(error)) this.lost(error);
          callback(error, client, done);
        });
      }
      return connect()!.catch((error: unknown) => {
        if (isConnectFailure(error)) this.lost(error as Error);
        throw error;
      });
    };
  }

  onApplicationShutdown(): void {
    this.closed = true;
    clearTimeout(this.probing);
  }

  private lost(error: Error): void {
    if (!this.reachable || this.closed) return;
    this.unreachableSince = Date.now();
    this.outages += 1;
    this.logger.error(`Database unreachable (${error.message}): requests answer 503 at once until it answers again (asked every ${REPROBE_INTERVAL_MS} ms)`);
    this.scheduleProbe(0);
  }

  private scheduleProbe(delayMs = REPROBE_INTERVAL_MS): void {
    this.probing = setTimeout(() => void this.probe(), delayMs);
    this.probing.unref();
  }

  private async probe(): Promise<void> {
    if (this.closed) return;
    try {
      await onFreshConnection(this.db, PROBE_TIMEOUT_MS, (query) => query('SELECT 1', []));
      const downForMs = Date.now() - (this.unreachableSince ?? Date.now());
      this.unreachableSince = undefined;
      this.logger.log(`Database reachable again after ${downForMs} ms`);
    } catch {
      this.scheduleProbe();
    }
  }
}
