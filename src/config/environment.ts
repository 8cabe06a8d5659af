import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  Min,
  MinLength,
  validateSync,
  ValidateBy,
  ValidationOptions,
} from 'class-validator';
import { parseCorsOrigins, parseTrustProxy } from './http-options';

/** A string the given parser accepts (the parser, not a regex, is the one definition of the format). */
function ParsesWith(parse: (raw: string) => unknown, message: string, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy({ name: 'parsesWith', validator: { validate: (value) => typeof value === 'string' && parse(value) !== undefined, defaultMessage: () => message } }, options);
}

/**
 * Every environment variable the service reads, with its default. This class is the one place that
 * knows the names; the rest of the code receives the typed AppConfig built from it.
 * Keep README's configuration table and .env.example in step with it.
 * Numbers are annotated `: number` on purpose: when compiled file by file (ts-node transpile-only,
 * which runs the admin CLI) an inferred type emits no `design:type`, and "3000" would stay a string.
 */
export class EnvironmentVariables {
  @IsOptional() @IsIn(['development', 'production', 'test'])
  NODE_ENV: 'development' | 'production' | 'test' = 'development';

  @IsInt() @Min(0) @Max(65535)
  PORT: number = 3000;

  @IsString()
  HOST: string = '0.0.0.0';

  @IsOptional() @Matches(/^postgres(ql)?:\/\/.+/, { message: 'DATABASE_URL must be a postgres:// URL' })
  DATABASE_URL?: string;

  @IsInt() @Min(1) @Max(500)
  DATABASE_POOL_SIZE: number = 20;

  @IsString()
  EMBEDDED_PG_DIR: string = '.data/pg';

  @IsOptional() @Matches(/^rediss?:\/\/.+/, { message: 'REDIS_URL must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  @IsOptional() @IsString() @MinLength(16, { message: 'ADMIN_TOKEN must be at least 16 characters' })
  ADMIN_TOKEN?: string;

  @IsIn(['sandbox', 'hlr-lookups'])
  PROVIDER: 'sandbox' | 'hlr-lookups' = 'sandbox';

  @IsUrl({ require_tld: false, protocols: ['http', 'https'] })
  HLR_LOOKUPS_URL: string = 'https://www.hlr-lookups.com/api/v2';

  @IsOptional() @IsString()
  HLR_LOOKUPS_KEY?: string;

  @IsOptional() @IsString()
  HLR_LOOKUPS_SECRET?: string;

  @IsInt() @Min(50) @Max(60000)
  PROVIDER_TIMEOUT_MS: number = 3000;

  @IsInt() @Min(0) @Max(5)
  PROVIDER_RETRIES: number = 1;

  @IsNumber() @Min(0.01) @Max(0.99)
  PROVIDER_BREAKER_FAILURE_RATE: number = 0.5;

  @IsInt() @Min(1000) @Max(600000)
  PROVIDER_BREAKER_WINDOW_MS: number = 10000;

  @IsInt() @Min(1) @Max(100000)
  PROVIDER_BREAKER_MIN_CALLS: number = 20;

  @IsInt() @Min(100) @Max(600000)
  PROVIDER_BREAKER_HALF_OPEN_MS: number = 10000;

  @IsInt() @Min(0) @Max(1_000_000)
  PRICE_NETWORK_STATUS: number = 4;

  @IsInt() @Min(0) @Max(1_000_000)
  PRICE_LINE_TYPE: number = 1;

  @IsInt() @Min(0) @Max(1_000_000)
  PRICE_PORTABILITY: number = 2;

  @IsInt() @Min(0)
  CACHE_TTL_NETWORK_STATUS_SECONDS: number = 3600;

  @IsInt() @Min(0)
  CACHE_TTL_PORTABILITY_SECONDS: number = 86400;

  @IsInt() @Min(0)
  CACHE_TTL_LINE_TYPE_SECONDS: number = 2_592_000;

  @IsInt() @Min(1)
  CACHE_MAX_ENTRIES: number = 100_000;

  /** Prefix of the lookup cache's Redis keys (lets several deployments or test runs share one Redis). */
  @IsString() @Matches(/^[A-Za-z0-9:_.-]{1,64}$/, { message: 'CACHE_KEY_PREFIX must be 1 to 64 of A-Z a-z 0-9 : _ . -' })
  CACHE_KEY_PREFIX: string = 'phone-filter:lookup:';

  @IsInt() @Min(5) @Max(86400)
  UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: number = 60;

  @IsInt() @Min(1) @Max(100000)
  IP_RATE_LIMIT: number = 20;

  @IsInt() @Min(1) @Max(3600)
  IP_RATE_WINDOW_SECONDS: number = 1;

  /** Start of every rate-limit key in Redis, so several deployments (or test runs) can share one Redis. */
  @Matches(/^[A-Za-z0-9_:.-]{1,64}$/, { message: 'RATE_LIMIT_REDIS_PREFIX must be 1 to 64 letters, digits, _ : . or -' })
  RATE_LIMIT_REDIS_PREFIX: string = 'pf:rl:';

  /** Lookups in flight at once on this instance, across all bulk jobs. */
  @IsInt() @Min(1) @Max(1000)
  BULK_CONCURRENCY: number = 50;

  /** Distinct numbers per queue job: the unit of work an instance takes, and what is redone after a crash at most. */
  @IsInt() @Min(1) @Max(1000)
  BULK_CHUNK_SIZE: number = 100;

  /** Queue jobs (chunks) one instance works on at once; they share BULK_CONCURRENCY. */
  @IsInt() @Min(1) @Max(32)
  BULK_PARALLEL_CHUNKS: number = 4;

  /**
   * The last resort: a chunk still running this long after it started is handed out again
   * (pg-boss expiration), even if its worker still renews its lease.
   */
  @IsInt() @Min(2) @Max(3600)
  BULK_CHUNK_TIMEOUT_SECONDS: number = 120;

  /** A chunk whose worker stopped renewing its lease (a dead instance) is handed out again after this. */
  @IsInt() @Min(2) @Max(3600)
  BULK_CHUNK_LEASE_SECONDS: number = 10;

  /**
   * Attempts of a chunk that keeps failing (1 s apart) after the first one; then its numbers still
   * without an answer are answered PROVIDER_UNAVAILABLE and refunded, and the job completes.
   */
  @IsInt() @Min(0) @Max(100_000)
  BULK_CHUNK_RETRIES: number = 1000;

  /** How often the queue looks for expired chunks (pg-boss maintenance interval). */
  @IsInt() @Min(1) @Max(3600)
  BULK_QUEUE_MAINTENANCE_SECONDS: number = 10;

  /** How often an idle worker polls the queue (pg-boss allows no less than 0.5). */
  @IsNumber() @Min(0.5) @Max(60)
  BULK_POLL_INTERVAL_SECONDS: number = 1;

  /** Name of the pg-boss queue of bulk chunks (webhooks use "<name>-webhooks"); instances sharing it share the work. */
  @Matches(/^[A-Za-z0-9_.-]{1,50}$/, { message: 'BULK_QUEUE_NAME must be 1 to 50 letters, digits, _ . or -' })
  BULK_QUEUE_NAME: string = 'bulk-lookups';

  /** Postgres schema pg-boss keeps its tables in. */
  @Matches(/^[a-z_][a-z0-9_]{0,49}$/, { message: 'BULK_QUEUE_SCHEMA must be a lower-case SQL identifier' })
  BULK_QUEUE_SCHEMA: string = 'pgboss';

  @IsInt() @Min(100) @Max(60000)
  BULK_WEBHOOK_TIMEOUT_MS: number = 5000;

  /** Deliveries after the first one before a callback is given up. */
  @IsInt() @Min(0) @Max(30)
  BULK_WEBHOOK_RETRIES: number = 8;

  /** First retry delay of a failed callback; it doubles (with jitter) at each retry. */
  @IsInt() @Min(1) @Max(3600)
  BULK_WEBHOOK_RETRY_DELAY_SECONDS: number = 5;

  /**
   * Lets callback_url point at loopback, private and link-local addresses (development, tests, a
   * receiver inside your own network). Off: callbacks go to public addresses only.
   */
  @IsIn(['true', 'false'], { message: 'BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS must be true or false' })
  BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS: 'true' | 'false' = 'false';

  /** Lookups in flight at once on this instance for watchlist rounds. */
  @IsInt() @Min(1) @Max(1000)
  WATCHLIST_CONCURRENCY: number = 50;

  /** Entries of a round charged and checked together: what a crash may leave to resume, at most. */
  @IsInt() @Min(1) @Max(10_000)
  WATCHLIST_CHUNK_SIZE: number = 500;

  /** How often an instance looks for due rounds and callbacks. */
  @IsInt() @Min(50) @Max(60_000)
  WATCHLIST_POLL_INTERVAL_MS: number = 1000;

  /** A round whose instance stopped renewing its lease this long is resumed by another. */
  @IsInt() @Min(2) @Max(3600)
  WATCHLIST_LEASE_SECONDS: number = 30;

  /**
   * Instances work the watchlists of their group (a watchlist joins the group of the instance that
   * created it). One group per deployment; tests use their own to run side by side.
   */
  @Matches(/^[A-Za-z0-9_.-]{1,50}$/, { message: 'WATCHLIST_SCHEDULE_GROUP must be 1 to 50 letters, digits, _ . or -' })
  WATCHLIST_SCHEDULE_GROUP: string = 'default';

  /** false: this instance serves the watchlist routes but runs no rounds and sends no callbacks. */
  @IsIn(['true', 'false'], { message: 'WATCHLIST_WORKER must be true or false' })
  WATCHLIST_WORKER: 'true' | 'false' = 'true';

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'silent'])
  LOG_LEVEL: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent' = 'info';

  /** On SIGTERM/SIGINT: how long the whole shutdown may take (drain, close, embedded database); past it, exit 1. */
  @IsInt() @Min(0) @Max(600_000)
  SHUTDOWN_TIMEOUT_MS: number = 10000;

  /** Unset: no CORS headers (browsers on other origins are refused). `*` or comma-separated origins. */
  @IsOptional()
  @ParsesWith(parseCorsOrigins, 'CORS_ORIGINS must be * or comma-separated origins such as https://app.example.com')
  CORS_ORIGINS?: string;

  /** Express `trust proxy`: false, true, a hop count, or loopback / linklocal / uniquelocal / IPs / CIDRs. */
  @ParsesWith(parseTrustProxy, 'TRUST_PROXY must be true, false, a number of hops, or comma-separated loopback/linklocal/uniquelocal/IP/CIDR')
  TRUST_PROXY: string = 'false';
}

export class ConfigurationError extends Error {}

/** Validates the raw environment once; a bad value stops the service with every problem named. */
export function validateEnvironment(raw: Record<string, unknown>): EnvironmentVariables {
  const withoutBlanks = Object.fromEntries(Object.entries(raw).filter(([, value]) => value !== ''));
  const env = plainToInstance(EnvironmentVariables, withoutBlanks, { enableImplicitConversion: true });
  const errors = validateSync(env, { skipMissingProperties: false });
  if (errors.length > 0) {
    const problems = errors.flatMap((error) =>
      Object.values(error.constraints ?? {}).map((text) => `  - ${error.property}=${JSON.stringify(raw[error.property])}: ${text}`),
    );
    throw new ConfigurationError(`Invalid configuration:\n${problems.join('\n')}`);
  }
  return env;
}
