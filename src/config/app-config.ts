import { createSecretKey, type KeyObject } from 'node:crypto';
import { CALLBACK_DEFAULTS, checkVariables, ConfigurationError, EnvironmentVariables } from './environment';
import type { ProviderEntry, RoutingRules } from './lookup-providers';

export type LogFormat = 'json' | 'pretty';

/** LOG_FORMAT when set; else human-readable lines for a person at a terminal, JSON for machines and production. */
export function resolveLogFormat(env: Pick<EnvironmentVariables, 'LOG_FORMAT' | 'NODE_ENV'>, isTerminal = Boolean(process.stdout.isTTY)): LogFormat {
  if (env.LOG_FORMAT) return env.LOG_FORMAT;
  return isTerminal && env.NODE_ENV !== 'production' ? 'pretty' : 'json';
}
import { resolveDataHashKey } from './data-hash-key';
import type { CallbackAddressPolicy } from '../common/callback-address';
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

/**
 * When a provider is demoted (asked after the healthy ones, never skipped): LOOKUP_DEMOTE_* in
 * docs/operations.md "Demotion by health".
 */
export interface DemotionOptions {
  /** Outcomes older than this are forgotten (LOOKUP_DEMOTE_WINDOW_MS). */
  windowMs: number;
  /** At most the last this many outcomes are kept (LOOKUP_DEMOTE_WINDOW_CALLS). */
  windowCalls: number;
  /** Fewer outcomes in the window: no verdict, not demoted (LOOKUP_DEMOTE_MIN_CALLS). */
  minCalls: number;
  /** This share of the window's outcomes failing for the upstream's health demotes (LOOKUP_DEMOTE_FAILURE_RATE). */
  failureRate: number;
  /** A median duration of the window's attempts at or above this demotes (LOOKUP_DEMOTE_LATENCY_MS). */
  latencyMs: number;
}

/** The typed, validated configuration every other part of the service receives (never process.env). */
export class AppConfig {
  readonly environment: EnvironmentVariables['NODE_ENV'];
  readonly port: number;
  readonly host: string;
  readonly database: { url: string; poolSize: number; connectTimeoutMs: number; preparedStatements: EnvironmentVariables['DATABASE_PREPARED_STATEMENTS'] };
  readonly redisUrl: string | undefined;
  /** REDIS_CALL_BUDGET_MS: one API request's whole Redis wait (common/redis-budget.ts). */
  readonly redisCallBudgetMs: number;
  readonly adminToken: string | undefined;
  readonly provider: {
    timeoutMs: number;
    /** READINESS_PROBE_INTERVAL_MS: the background probe behind /health/ready. */
    probeIntervalMs: number;
    retries: number;
    breaker: BreakerOptions;
    /** The biggest upstream answer read, in bytes; a bigger one is cut off and refunded. */
    maxResponseBytes: number;
    /** The upstreams in priority order: LOOKUP_PROVIDERS, or the one of PROVIDER (the sandbox when neither is set). */
    upstreams: ProviderEntry[];
    /** LOOKUP_ROUTING: per check, per calling code, residency (none: LOOKUP_PROVIDERS' order for all). */
    routing: RoutingRules;
    /** LOOKUP_CALL_BUDGET_MS: the time one check may take over all providers of the failover. */
    callBudgetMs: number;
    /** LOOKUP_DEMOTE_*: when a provider is asked after the healthy ones. */
    demotion: DemotionOptions;
  };
  /** The checks' price and cache-lifetime variables that are set, by name; the CheckRegistry reads them (defaults in src/checks/). */
  readonly checkTuning: Readonly<Record<string, number>>;
  readonly cache: { maxEntries: number; keyPrefix: string };
  readonly unsettledChargeRefundAfterSeconds: number;
  readonly ipRateLimit: { limit: number; windowSeconds: number };
  readonly rateLimitRedisPrefix: string;
  /**
   * The risk verdict: its counters' Redis prefix (RISK_REDIS_PREFIX) and the deployment's destination
   * table (RISK_DESTINATIONS; undefined: the default of src/risk/destination-defaults.ts).
   */
  readonly risk: { redisPrefix: string; destinations: Readonly<Record<string, number>> | undefined };
  readonly logLevel: EnvironmentVariables['LOG_LEVEL'];
  readonly logFormat: LogFormat;
  readonly shutdownTimeoutMs: number;
  readonly http: {
    corsOrigins: CorsOrigins | undefined;
    trustProxy: TrustProxy;
    unauthenticatedBodyLimitBytes: number;
    headersTimeoutMs: number;
    requestTimeoutMs: number;
    keepAliveTimeoutMs: number;
    maxConnections: number;
    /** CALL_QUEUE_DEADLINE_MS: a paid call not charged this long after its request arrived is shed (503). */
    callQueueDeadlineMs: number;
  };
  /** Whether /docs, /docs-json, /metrics and /health/ready's detail need a token (see OPS_ENDPOINTS). */
  readonly opsEndpoints: { private: boolean; metricsToken: string | undefined };
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
  };
  /**
   * Every outbound delivery (webhooks/): CALLBACK_*, or the deprecated BULK_WEBHOOK_* names;
   * `deprecatedNames` lists the old names found, said once at start-up.
   */
  readonly callbacks: CallbackAddressPolicy & { timeoutMs: number; retries: number; retryDelaySeconds: number; deprecatedNames: string[] };
  readonly events: { pollIntervalMs: number };
  /** Key of the keyed hashes of personal data (DATA_HASH_KEY, docs/privacy.md). */
  readonly dataHashKey: KeyObject;
  /** How long each store keeps phone numbers (docs/privacy.md); run by RetentionScheduler. */
  readonly retention: {
    bulkEntriesDays: number;
    ledgerPhoneDays: number;
    watchlistRemovedDays: number;
    watchlistChangesDays: number;
    watchlistRoundsDays: number;
    idempotencyGraceHours: number;
    riskFeedbackDays: number;
    adminAuditDays: number;
    batchSize: number;
    intervalSeconds: number;
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
    this.database = {
      url: databaseUrl,
      poolSize: env.DATABASE_POOL_SIZE,
      connectTimeoutMs: env.DATABASE_CONNECT_TIMEOUT_MS,
      preparedStatements: env.DATABASE_PREPARED_STATEMENTS,
    };
    this.redisUrl = env.REDIS_URL;
    this.redisCallBudgetMs = env.REDIS_CALL_BUDGET_MS;
    this.adminToken = env.ADMIN_TOKEN;
    this.provider = {
      timeoutMs: env.PROVIDER_TIMEOUT_MS,
      probeIntervalMs: env.READINESS_PROBE_INTERVAL_MS,
      retries: env.PROVIDER_RETRIES,
      breaker: {
        failureRate: env.PROVIDER_BREAKER_FAILURE_RATE,
        windowMs: env.PROVIDER_BREAKER_WINDOW_MS,
        minCalls: env.PROVIDER_BREAKER_MIN_CALLS,
        halfOpenMs: env.PROVIDER_BREAKER_HALF_OPEN_MS,
      },
      maxResponseBytes: env.PROVIDER_MAX_RESPONSE_BYTES,
      callBudgetMs: env.LOOKUP_CALL_BUDGET_MS,
      demotion: {
        windowMs: env.LOOKUP_DEMOTE_WINDOW_MS,
        windowCalls: env.LOOKUP_DEMOTE_WINDOW_CALLS,
        minCalls: env.LOOKUP_DEMOTE_MIN_CALLS,
        failureRate: env.LOOKUP_DEMOTE_FAILURE_RATE,
        latencyMs: env.LOOKUP_DEMOTE_LATENCY_MS,
      },
      upstreams: env.lookupProviderEntries,
      routing: env.lookupRouting ?? { checks: {}, countries: {}, residency: {} },
    };
    this.checkTuning = checkVariables(env);
    this.cache = {
      maxEntries: env.CACHE_MAX_ENTRIES,
      keyPrefix: env.CACHE_KEY_PREFIX,
    };
    this.unsettledChargeRefundAfterSeconds = env.UNSETTLED_CHARGE_REFUND_AFTER_SECONDS;
    this.ipRateLimit = { limit: env.IP_RATE_LIMIT, windowSeconds: env.IP_RATE_WINDOW_SECONDS };
    this.rateLimitRedisPrefix = env.RATE_LIMIT_REDIS_PREFIX;
    this.risk = { redisPrefix: env.RISK_REDIS_PREFIX, destinations: env.riskDestinations };
    this.logLevel = env.LOG_LEVEL;
    this.logFormat = resolveLogFormat(env);
    this.shutdownTimeoutMs = env.SHUTDOWN_TIMEOUT_MS;
    this.http = {
      corsOrigins: env.CORS_ORIGINS === undefined ? undefined : parseCorsOrigins(env.CORS_ORIGINS),
      trustProxy: parseTrustProxy(env.TRUST_PROXY) ?? false,
      unauthenticatedBodyLimitBytes: env.UNAUTHENTICATED_BODY_LIMIT_BYTES,
      headersTimeoutMs: env.HTTP_HEADERS_TIMEOUT_MS,
      requestTimeoutMs: env.HTTP_REQUEST_TIMEOUT_MS,
      keepAliveTimeoutMs: env.HTTP_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: env.HTTP_MAX_CONNECTIONS,
      callQueueDeadlineMs: env.CALL_QUEUE_DEADLINE_MS,
    };
    this.opsEndpoints = {
      private: (env.OPS_ENDPOINTS ?? (env.NODE_ENV === 'production' ? 'private' : 'public')) === 'private',
      metricsToken: env.METRICS_TOKEN,
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
    };
    this.callbacks = callbackSettings(env);
    this.events = { pollIntervalMs: env.EVENTS_POLL_INTERVAL_MS };
    this.retention = {
      bulkEntriesDays: env.RETENTION_BULK_ENTRIES_DAYS,
      ledgerPhoneDays: env.RETENTION_LEDGER_PHONE_DAYS,
      watchlistRemovedDays: env.RETENTION_WATCHLIST_REMOVED_DAYS,
      watchlistChangesDays: env.RETENTION_WATCHLIST_CHANGES_DAYS,
      watchlistRoundsDays: env.RETENTION_WATCHLIST_ROUNDS_DAYS,
      idempotencyGraceHours: env.RETENTION_IDEMPOTENCY_GRACE_HOURS,
      riskFeedbackDays: env.RETENTION_RISK_FEEDBACK_DAYS,
      adminAuditDays: env.RETENTION_ADMIN_AUDIT_DAYS,
      batchSize: env.RETENTION_BATCH_SIZE,
      intervalSeconds: env.RETENTION_INTERVAL_SECONDS,
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
    // With failover a call may ask every upstream in turn.
    const upstreams = this.provider.upstreams.length;
    const longestCallSeconds = (upstreams * (this.provider.retries + 1) * this.provider.timeoutMs) / 1000 + 5;
    if (this.unsettledChargeRefundAfterSeconds < longestCallSeconds) {
      throw new ConfigurationError(
        `Invalid configuration:\n  - UNSETTLED_CHARGE_REFUND_AFTER_SECONDS=${this.unsettledChargeRefundAfterSeconds} must be at least ` +
          `${Math.ceil(longestCallSeconds)}: the longest call (providers × (PROVIDER_RETRIES + 1) × PROVIDER_TIMEOUT_MS) plus 5 s.`,
      );
    }
    // A KeyObject, made once: see HashKey in common/keyed-hash.ts.
    this.dataHashKey = createSecretKey(resolveDataHashKey(env.DATA_HASH_KEY, env.NODE_ENV));
  }
}

/** CALLBACK_* first; the deprecated name when only it is set (named in `deprecatedNames`); else the default. */
function callbackSettings(env: EnvironmentVariables): AppConfig['callbacks'] {
  const deprecatedNames: string[] = [];
  const pick = <T>(current: T | undefined, oldName: keyof EnvironmentVariables, fallback: T): T => {
    const old = env[oldName] as T | undefined;
    if (old !== undefined) deprecatedNames.push(oldName);
    return current ?? old ?? fallback;
  };
  return {
    timeoutMs: pick(env.CALLBACK_TIMEOUT_MS, 'BULK_WEBHOOK_TIMEOUT_MS', CALLBACK_DEFAULTS.CALLBACK_TIMEOUT_MS),
    retries: pick(env.CALLBACK_RETRIES, 'BULK_WEBHOOK_RETRIES', CALLBACK_DEFAULTS.CALLBACK_RETRIES),
    retryDelaySeconds: pick(env.CALLBACK_RETRY_DELAY_SECONDS, 'BULK_WEBHOOK_RETRY_DELAY_SECONDS', CALLBACK_DEFAULTS.CALLBACK_RETRY_DELAY_SECONDS),
    allowPrivateNetworks: pick<string>(env.CALLBACK_ALLOW_PRIVATE_NETWORKS, 'BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS', CALLBACK_DEFAULTS.CALLBACK_ALLOW_PRIVATE_NETWORKS) === 'true',
    allowedPorts: env.CALLBACK_ALLOWED_PORTS === 'any' ? 'any' : env.CALLBACK_ALLOWED_PORTS.split(',').map(Number),
    deprecatedNames,
  };
}
