import type { CheckName, CheckPrices } from '../checks/checks';
import { ConfigurationError, EnvironmentVariables } from './environment';
import { CorsOrigins, parseCorsOrigins, parseTrustProxy, TrustProxy } from './http-options';

/**
 * The circuit breaker in front of the upstream: it opens when more than `failureRate` of the calls of
 * the last `windowMs` failed for the upstream's health (transport errors, timeouts, 5xx), once the
 * window holds at least `minCalls` calls; after `halfOpenMs` one trial call may close it again.
 */
export interface BreakerOptions {
  failureRate: number;
  windowMs: number;
  minCalls: number;
  halfOpenMs: number;
}

/** The typed, validated configuration every other part of the service receives (never process.env). */
export class AppConfig {
  readonly environment: EnvironmentVariables['NODE_ENV'];
  readonly port: number;
  readonly host: string;
  readonly database: { url: string; poolSize: number };
  readonly redisUrl: string | undefined;
  readonly adminToken: string | undefined;
  readonly provider: {
    kind: 'sandbox' | 'hlr-lookups';
    hlrLookups: { baseUrl: string; key: string; secret: string };
    timeoutMs: number;
    retries: number;
    breaker: BreakerOptions;
  };
  readonly prices: CheckPrices;
  readonly cache: { ttlSeconds: Record<CheckName, number>; maxEntries: number; keyPrefix: string };
  readonly unsettledChargeRefundAfterSeconds: number;
  readonly ipRateLimit: { limit: number; windowSeconds: number };
  readonly rateLimitRedisPrefix: string;
  readonly logLevel: EnvironmentVariables['LOG_LEVEL'];
  readonly shutdownTimeoutMs: number;
  readonly http: { corsOrigins: CorsOrigins | undefined; trustProxy: TrustProxy };
  readonly bulk: {
    concurrency: number;
    chunkSize: number;
    parallelChunks: number;
    chunkTimeoutSeconds: number;
    chunkLeaseSeconds: number;
    chunkRetries: number;
    maintenanceIntervalSeconds: number;
    pollIntervalSeconds: number;
    queueName: string;
    queueSchema: string;
    webhook: { timeoutMs: number; retries: number; retryDelaySeconds: number; allowPrivateNetworks: boolean };
  };
  readonly watchlists: {
    concurrency: number;
    chunkSize: number;
    pollIntervalMs: number;
    leaseSeconds: number;
    scheduleGroup: string;
    worker: boolean;
  };

  constructor(env: EnvironmentVariables, databaseUrl: string) {
    this.environment = env.NODE_ENV;
    this.port = env.PORT;
    this.host = env.HOST;
    this.database = { url: databaseUrl, poolSize: env.DATABASE_POOL_SIZE };
    this.redisUrl = env.REDIS_URL;
    this.adminToken = env.ADMIN_TOKEN;
    this.provider = {
      kind: env.PROVIDER,
      hlrLookups: {
        baseUrl: env.HLR_LOOKUPS_URL.replace(/\/+$/, ''),
        key: env.HLR_LOOKUPS_KEY ?? '',
        secret: env.HLR_LOOKUPS_SECRET ?? '',
      },
      timeoutMs: env.PROVIDER_TIMEOUT_MS,
      retries: env.PROVIDER_RETRIES,
      breaker: {
        failureRate: env.PROVIDER_BREAKER_FAILURE_RATE,
        windowMs: env.PROVIDER_BREAKER_WINDOW_MS,
        minCalls: env.PROVIDER_BREAKER_MIN_CALLS,
        halfOpenMs: env.PROVIDER_BREAKER_HALF_OPEN_MS,
      },
    };
    this.prices = {
      network_status: env.PRICE_NETWORK_STATUS,
      line_type: env.PRICE_LINE_TYPE,
      portability: env.PRICE_PORTABILITY,
    };
    this.cache = {
      ttlSeconds: {
        network_status: env.CACHE_TTL_NETWORK_STATUS_SECONDS,
        line_type: env.CACHE_TTL_LINE_TYPE_SECONDS,
        portability: env.CACHE_TTL_PORTABILITY_SECONDS,
      },
      maxEntries: env.CACHE_MAX_ENTRIES,
      keyPrefix: env.CACHE_KEY_PREFIX,
    };
    this.unsettledChargeRefundAfterSeconds = env.UNSETTLED_CHARGE_REFUND_AFTER_SECONDS;
    this.ipRateLimit = { limit: env.IP_RATE_LIMIT, windowSeconds: env.IP_RATE_WINDOW_SECONDS };
    this.rateLimitRedisPrefix = env.RATE_LIMIT_REDIS_PREFIX;
    this.logLevel = env.LOG_LEVEL;
    this.shutdownTimeoutMs = env.SHUTDOWN_TIMEOUT_MS;
    this.http = {
      corsOrigins: env.CORS_ORIGINS === undefined ? undefined : parseCorsOrigins(env.CORS_ORIGINS),
      trustProxy: parseTrustProxy(env.TRUST_PROXY) ?? false,
    };
    this.bulk = {
      concurrency: env.BULK_CONCURRENCY,
      chunkSize: env.BULK_CHUNK_SIZE,
      parallelChunks: env.BULK_PARALLEL_CHUNKS,
      chunkTimeoutSeconds: env.BULK_CHUNK_TIMEOUT_SECONDS,
      chunkLeaseSeconds: env.BULK_CHUNK_LEASE_SECONDS,
      chunkRetries: env.BULK_CHUNK_RETRIES,
      maintenanceIntervalSeconds: env.BULK_QUEUE_MAINTENANCE_SECONDS,
      pollIntervalSeconds: env.BULK_POLL_INTERVAL_SECONDS,
      queueName: env.BULK_QUEUE_NAME,
      queueSchema: env.BULK_QUEUE_SCHEMA,
      webhook: {
        timeoutMs: env.BULK_WEBHOOK_TIMEOUT_MS,
        retries: env.BULK_WEBHOOK_RETRIES,
        retryDelaySeconds: env.BULK_WEBHOOK_RETRY_DELAY_SECONDS,
        allowPrivateNetworks: env.BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS === 'true',
      },
    };
    this.watchlists = {
      concurrency: env.WATCHLIST_CONCURRENCY,
      chunkSize: env.WATCHLIST_CHUNK_SIZE,
      pollIntervalMs: env.WATCHLIST_POLL_INTERVAL_MS,
      leaseSeconds: env.WATCHLIST_LEASE_SECONDS,
      scheduleGroup: env.WATCHLIST_SCHEDULE_GROUP,
      worker: env.WATCHLIST_WORKER === 'true',
    };
    // The sweep must never take a call that is still running for an abandoned one (it would refund a
    // call that then answers, and free its Idempotency-Key for a second charge).
    const longestCallSeconds = ((this.provider.retries + 1) * this.provider.timeoutMs) / 1000 + 5;
    if (this.unsettledChargeRefundAfterSeconds < longestCallSeconds) {
      throw new ConfigurationError(
        `Invalid configuration:\n  - UNSETTLED_CHARGE_REFUND_AFTER_SECONDS=${this.unsettledChargeRefundAfterSeconds} must be at least ` +
          `${Math.ceil(longestCallSeconds)}: the longest call ((PROVIDER_RETRIES + 1) × PROVIDER_TIMEOUT_MS) plus 5 s.`,
      );
    }
    if (this.provider.kind === 'hlr-lookups' && (!this.provider.hlrLookups.key || !this.provider.hlrLookups.secret)) {
      throw new Error('PROVIDER=hlr-lookups needs HLR_LOOKUPS_KEY and HLR_LOOKUPS_SECRET');
    }
  }
}
