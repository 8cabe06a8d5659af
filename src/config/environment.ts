import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import {
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  MinLength,
  validateSync,
  ValidateBy,
  ValidationOptions,
} from 'class-validator';
import { parseCorsOrigins, parseTrustProxy } from './http-options';
import { parseLookupProviders, parseLookupRouting, ProviderEntry, RoutingRules } from './lookup-providers';
import { UPSTREAM_ADAPTER_NAMES, type UpstreamAdapterName } from './upstream-adapters';
import { BUILT_IN_CHECKS } from '../checks/built-in-checks';

/** A string the given parser accepts (the parser, not a regex, is the one definition of the format). */
function ParsesWith(parse: (raw: string) => unknown, message: string, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy({ name: 'parsesWith', validator: { validate: (value) => typeof value === 'string' && parse(value) !== undefined, defaultMessage: () => message } }, options);
}

/** A TCP port, 1 to 65535, as written in a list. */
const PORT = '([1-9]\\d{0,3}|[1-5]\\d{4}|6[0-4]\\d{3}|65[0-4]\\d{2}|655[0-2]\\d|6553[0-5])';

/**
 * Every environment variable the service reads, with its default. This class is the one place that
 * knows the names; the rest of the code receives the typed AppConfig built from it.
 * Keep docs/operations.md's configuration reference and .env.example in step with it.
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

  /**
   * How the request path's charge and settle statements run: `named` prepared statements (planned once
   * per connection), `unnamed` (behind a pooler in transaction mode without prepared-statement support:
   * PgBouncer < 1.21, RDS Proxy), or `auto`: named unless start-up finds that named statements do not
   * survive between transactions, and unnamed from the first sign of it at run time (docs/operations.md).
   */
  @IsIn(['named', 'unnamed', 'auto'])
  DATABASE_PREPARED_STATEMENTS: 'named' | 'unnamed' | 'auto' = 'auto';

  /** Unset: .data/pg in the checkout, or a folder the postgres system user can reach (as root). */
  @IsOptional() @IsString()
  EMBEDDED_PG_DIR?: string;

  @IsOptional() @Matches(/^rediss?:\/\/.+/, { message: 'REDIS_URL must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  /**
   * The most one API request waits on Redis in all (plan limit, cache reads and write together); past
   * it the request goes on without Redis, as when Redis is down (docs/operations.md).
   */
  @IsInt() @Min(10) @Max(10_000)
  REDIS_CALL_BUDGET_MS: number = 500;

  @IsOptional() @IsString() @MinLength(16, { message: 'ADMIN_TOKEN must be at least 16 characters' })
  ADMIN_TOKEN?: string;

  /**
   * Shorthand for LOOKUP_PROVIDERS with one entry: `PROVIDER=hlr-lookups` is `LOOKUP_PROVIDERS=hlr-lookups`
   * (its settings `HLR_LOOKUPS_URL`, `HLR_LOOKUPS_KEY`, `HLR_LOOKUPS_SECRET`). Unset with LOOKUP_PROVIDERS
   * unset: the sandbox.
   */
  @IsOptional() @IsIn(UPSTREAM_ADAPTER_NAMES)
  PROVIDER?: UpstreamAdapterName;

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

  /**
   * Each check's price (`PRICE_<CHECK>`, credits per call) and cache lifetime (`CACHE_TTL_<CHECK>_SECONDS`):
   * the variable names and defaults are in the check's definition (src/checks/), not here; any set value is
   * validated by validateEnvironment (an integer, prices 0 to 1,000,000) and read by the CheckRegistry.
   */
  [checkVariable: `PRICE_${string}` | `CACHE_TTL_${string}`]: number | undefined;

  /**
   * Provider ids in priority order (e.g. `hlr-lookups,backup`), each configured by `<ID>_ADAPTER`,
   * `<ID>_URL`, `<ID>_KEY`, `<ID>_SECRET` as its adapter needs (src/config/lookup-providers.ts).
   * Unset: PROVIDER's one, or the sandbox.
   */
  @IsOptional() @IsString()
  LOOKUP_PROVIDERS?: string;

  /** Routing rules over LOOKUP_PROVIDERS (JSON, src/config/lookup-providers.ts): per check, per calling code, residency. */
  @IsOptional() @IsString()
  LOOKUP_ROUTING?: string;

  /**
   * The time one check may take over every provider of LOOKUP_PROVIDERS and their attempts: once spent,
   * the providers not yet asked are skipped, and the last attempt is cut to what remains (refunded 503).
   */
  @IsInt() @Min(100) @Max(120000)
  LOOKUP_CALL_BUDGET_MS: number = 8000;

  /**
   * Demotion by health (docs/operations.md "Demotion by health"): a provider whose last
   * LOOKUP_DEMOTE_WINDOW_CALLS attempts within LOOKUP_DEMOTE_WINDOW_MS (at least LOOKUP_DEMOTE_MIN_CALLS
   * of them) failed at LOOKUP_DEMOTE_FAILURE_RATE or more, or took LOOKUP_DEMOTE_LATENCY_MS or more at
   * the median, is asked after the healthy ones.
   */
  @IsInt() @Min(1000) @Max(600000)
  LOOKUP_DEMOTE_WINDOW_MS: number = 30000;

  @IsInt() @Min(1) @Max(500)
  LOOKUP_DEMOTE_WINDOW_CALLS: number = 20;

  @IsInt() @Min(1) @Max(500)
  LOOKUP_DEMOTE_MIN_CALLS: number = 10;

  @IsNumber() @Min(0.01) @Max(1)
  LOOKUP_DEMOTE_FAILURE_RATE: number = 0.5;

  @IsInt() @Min(10) @Max(120000)
  LOOKUP_DEMOTE_LATENCY_MS: number = 2000;

  /** LOOKUP_ROUTING as validated (set by validateEnvironment, not read from the environment). */
  lookupRouting?: RoutingRules;

  /** The upstreams of LOOKUP_PROVIDERS (or PROVIDER) as validated (set by validateEnvironment, not read from the environment). */
  lookupProviderEntries: ProviderEntry[] = [];

  /** The biggest upstream answer read (1 MiB): a bigger one is cut off as it arrives, and the call refunded. */
  @IsInt() @Min(1024) @Max(64 * 1024 * 1024)
  PROVIDER_MAX_RESPONSE_BYTES: number = 1024 * 1024;

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

  /** Name of the pg-boss queue of bulk chunks; instances sharing it share the work. */
  @Matches(/^[A-Za-z0-9_.-]{1,50}$/, { message: 'BULK_QUEUE_NAME must be 1 to 50 letters, digits, _ . or -' })
  BULK_QUEUE_NAME: string = 'bulk-lookups';

  /** Postgres schema pg-boss keeps its tables in. */
  @Matches(/^[a-z_][a-z0-9_]{0,49}$/, { message: 'BULK_QUEUE_SCHEMA must be a lower-case SQL identifier' })
  BULK_QUEUE_SCHEMA: string = 'pgboss';

  /** How long a callback receiver has to answer (every outbound delivery: account events, bulk, watchlists). Default 5000. */
  @IsOptional() @IsInt() @Min(100) @Max(60000)
  CALLBACK_TIMEOUT_MS?: number;

  /** Deliveries after the first one before a callback is given up. Default 8. */
  @IsOptional() @IsInt() @Min(0) @Max(30)
  CALLBACK_RETRIES?: number;

  /** First retry delay of a failed callback; it doubles (with jitter) at each retry. Default 5. */
  @IsOptional() @IsInt() @Min(1) @Max(3600)
  CALLBACK_RETRY_DELAY_SECONDS?: number;

  /**
   * Lets callback_url and webhook_url point at loopback, private and link-local addresses
   * (development, tests, a receiver inside your own network). Off: callbacks go to public addresses only.
   */
  @IsOptional() @IsIn(['true', 'false'], { message: 'CALLBACK_ALLOW_PRIVATE_NETWORKS must be true or false' })
  CALLBACK_ALLOW_PRIVATE_NETWORKS?: 'true' | 'false';

  /**
   * The ports a callback_url or webhook_url may name, comma-separated, or `any` (a URL without a port
   * uses 80 for http, 443 for https). Not checked with CALLBACK_ALLOW_PRIVATE_NETWORKS=true.
   */
  @Matches(new RegExp(`^(any|${PORT}(,${PORT})*)$`), { message: 'CALLBACK_ALLOWED_PORTS must be a comma-separated list of ports (e.g. 80,443,8443) or any' })
  CALLBACK_ALLOWED_PORTS: string = '80,443';

  /** Deprecated names of CALLBACK_TIMEOUT_MS, CALLBACK_RETRIES, CALLBACK_RETRY_DELAY_SECONDS, CALLBACK_ALLOW_PRIVATE_NETWORKS: still read. */
  @IsOptional() @IsInt() @Min(100) @Max(60000)
  BULK_WEBHOOK_TIMEOUT_MS?: number;
  @IsOptional() @IsInt() @Min(0) @Max(30)
  BULK_WEBHOOK_RETRIES?: number;
  @IsOptional() @IsInt() @Min(1) @Max(3600)
  BULK_WEBHOOK_RETRY_DELAY_SECONDS?: number;
  @IsOptional() @IsIn(['true', 'false'], { message: 'BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS must be true or false' })
  BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS?: 'true' | 'false';

  /** How often each instance looks for callbacks to deliver (the outbox of webhooks/). */
  @IsInt() @Min(50) @Max(60000)
  EVENTS_POLL_INTERVAL_MS: number = 1000;

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

  /**
   * Key of the keyed hashes kept instead of phone numbers (lookup cache keys, Idempotency-Key request
   * hashes, erasure audit rows; docs/privacy.md). Required in production; elsewhere generated on first
   * start into .data/data-hash-key. Changing it forgets the lookup cache and in-flight Idempotency-Keys.
   */
  @IsOptional() @IsString() @MinLength(32, { message: 'DATA_HASH_KEY must be at least 32 characters (e.g. openssl rand -hex 32)' })
  DATA_HASH_KEY?: string;

  /** Bulk results (the entries) are deleted this many days after their job completed; the job's counts and charges stay. */
  @IsInt() @Min(1) @Max(3650)
  RETENTION_BULK_ENTRIES_DAYS: number = 30;

  /** Ledger rows older than this keep their phone only in masked form (amounts and references untouched). */
  @IsInt() @Min(1) @Max(3650)
  RETENTION_LEDGER_PHONE_DAYS: number = 90;

  /** Removed watchlist entries, and the entries of deleted watchlists, are deleted (with their changes) after this. */
  @IsInt() @Min(1) @Max(3650)
  RETENTION_WATCHLIST_REMOVED_DAYS: number = 30;

  /** Changes detected for entries still watched are kept this long. */
  @IsInt() @Min(1) @Max(3650)
  RETENTION_WATCHLIST_CHANGES_DAYS: number = 365;

  /** Watchlist rounds (their counts) are kept this long after they started. */
  @IsInt() @Min(1) @Max(3650)
  RETENTION_WATCHLIST_ROUNDS_DAYS: number = 365;

  /** Idempotency-Key rows are deleted this many hours after their key's 24 h life ended, charged or not. */
  @IsInt() @Min(0) @Max(8760)
  RETENTION_IDEMPOTENCY_GRACE_HOURS: number = 24;

  /** The admin audit trail is kept this long. */
  @IsInt() @Min(1) @Max(36500)
  RETENTION_ADMIN_AUDIT_DAYS: number = 400;

  /** Rows one retention statement touches at most (one short transaction each). */
  @IsInt() @Min(1) @Max(100_000)
  RETENTION_BATCH_SIZE: number = 5000;

  /** How often an instance runs the retention jobs (each instance may; they never do a row twice). */
  @IsInt() @Min(10) @Max(86_400)
  RETENTION_INTERVAL_SECONDS: number = 3600;

  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'silent'])
  LOG_LEVEL: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent' = 'info';

  /** Unset: `pretty` (human-readable) on a terminal outside production, else `json` (one object a line). */
  @IsOptional() @IsIn(['json', 'pretty'], { message: 'LOG_FORMAT must be json or pretty' })
  LOG_FORMAT?: 'json' | 'pretty';

  /** On SIGTERM/SIGINT/SIGHUP: how long the whole shutdown may take (drain, close, embedded database); past it, exit 1. */
  @IsInt() @Min(0) @Max(600_000)
  SHUTDOWN_TIMEOUT_MS: number = 10000;

  /** Unset: no CORS headers (browsers on other origins are refused). `*` or comma-separated origins. */
  @IsOptional()
  @ParsesWith(parseCorsOrigins, 'CORS_ORIGINS must be * or comma-separated origins such as https://app.example.com')
  CORS_ORIGINS?: string;

  /** Express `trust proxy`: false, true, a hop count, or loopback / linklocal / uniquelocal / IPs / CIDRs. */
  @ParsesWith(parseTrustProxy, 'TRUST_PROXY must be true, false, a number of hops, or comma-separated loopback/linklocal/uniquelocal/IP/CIDR')
  TRUST_PROXY: string = 'false';

  /**
   * Most bytes (after Content-Encoding is undone) read of the body of a request that carries no valid
   * API key or admin token: it is answered 401 anyway, so it may not cost the CPU of inflating 1 MiB.
   */
  @IsInt() @Min(0) @Max(1024 * 1024)
  UNAUTHENTICATED_BODY_LIMIT_BYTES: number = 4096;

  /** Time a client has to send a request's headers (Node's headersTimeout). */
  @IsInt() @Min(100) @Max(600_000)
  HTTP_HEADERS_TIMEOUT_MS: number = 10_000;

  /** Time a client has to send a whole request, body included (Node's requestTimeout). */
  @IsInt() @Min(100) @Max(3_600_000)
  HTTP_REQUEST_TIMEOUT_MS: number = 30_000;

  /** An idle keep-alive connection is closed after this; behind a load balancer, set it above the balancer's idle timeout. */
  @IsInt() @Min(100) @Max(3_600_000)
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number = 5_000;

  /** Open client connections per instance; the ones beyond are refused (closed at once). 0: no cap. */
  @IsInt() @Min(0) @Max(1_000_000)
  HTTP_MAX_CONNECTIONS: number = 2000;

  /**
   * /docs, /docs-json, /metrics and the detail of /health/ready: `public`, or `private` (they need
   * `Authorization: Bearer <ADMIN_TOKEN>`, /metrics also METRICS_TOKEN; the bare readiness status stays
   * public). Unset: private when NODE_ENV=production, public otherwise.
   */
  @IsOptional() @IsIn(['public', 'private'], { message: 'OPS_ENDPOINTS must be public or private' })
  OPS_ENDPOINTS?: 'public' | 'private';

  /** A token a Prometheus scraper sends (`Authorization: Bearer …`) for /metrics when OPS_ENDPOINTS is private. */
  @IsOptional() @IsString() @MinLength(16, { message: 'METRICS_TOKEN must be at least 16 characters' })
  METRICS_TOKEN?: string;
}

export class ConfigurationError extends Error {}

/** The checks' price and cache-lifetime variables (named in each check's definition, src/checks/). */
const CHECK_VARIABLES = [
  { pattern: /^PRICE_[A-Z0-9_]+$/, max: 1_000_000 },
  { pattern: /^CACHE_TTL_[A-Z0-9_]+_SECONDS$/, max: Number.MAX_SAFE_INTEGER },
];

/** The set price and cache-lifetime variables of the checks, validated, by name (AppConfig.checkTuning). */
export function checkVariables(env: EnvironmentVariables): Record<string, number> {
  return Object.fromEntries(
    Object.entries(env).filter(([name, value]) => typeof value === 'number' && CHECK_VARIABLES.some(({ pattern }) => pattern.test(name))),
  );
}

/** One line, before anything starts (docs/privacy.md "The hash key"). */
export const DATA_HASH_KEY_REQUIRED =
  'DATA_HASH_KEY is required with NODE_ENV=production: set it to a secret of at least 32 characters (e.g. `openssl rand -hex 32`) and keep it (docs/privacy.md).';

/** Variables whose value is a secret: never printed, even when invalid. */
const SECRET_NAME = /(_KEY|_SECRET|_TOKEN)$|PASSWORD/i;

/** A value as an error message may show it: secrets as <redacted>, a URL without its password. */
function shownValue(name: string, value: unknown): string {
  if (value === undefined) return 'undefined';
  if (SECRET_NAME.test(name)) return '<redacted>';
  const text = String(value);
  // scheme://user:password@host: the password goes, whether or not the URL parses.
  return JSON.stringify(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text.replace(/^([^:/]+:\/\/[^:@/]*):[^@/]*@/, '$1:<redacted>@') : text);
}

/** Validates the raw environment once; a bad value stops the service with every problem named. */
/** The constraints that say what kind of value is wanted, first: a bound matters only once the kind is right. */
const KIND_CONSTRAINTS = ['isInt', 'isNumber', 'isBoolean', 'isIn', 'isEnum', 'isString'];

function firstConstraint(constraints: Record<string, string>): string {
  const kind = KIND_CONSTRAINTS.find((name) => name in constraints);
  return kind ? constraints[kind] : (Object.values(constraints)[0] ?? 'invalid');
}

export function validateEnvironment(raw: Record<string, unknown>): EnvironmentVariables {
  const withoutBlanks = Object.fromEntries(Object.entries(raw).filter(([, value]) => value !== ''));
  const env = plainToInstance(EnvironmentVariables, withoutBlanks, { enableImplicitConversion: true });
  const errors = validateSync(env, { skipMissingProperties: false });
  // One message a variable: PORT=abc is not an integer, and saying it is also out of both bounds says nothing.
  const problems = errors.map((error) => `  - ${error.property}=${shownValue(error.property, raw[error.property])}: ${firstConstraint(error.constraints ?? {})}`);
  for (const [name, value] of Object.entries(withoutBlanks)) {
    const rule = CHECK_VARIABLES.find(({ pattern }) => pattern.test(name));
    if (!rule) continue;
    const number = /^\d+$/.test(String(value).trim()) ? Number(value) : Number.NaN;
    if (Number.isSafeInteger(number) && number <= rule.max) env[name as `PRICE_${string}`] = number;
    else problems.push(`  - ${name}=${JSON.stringify(value)}: ${name} must be an integer from 0 to ${rule.max}`);
  }
  if (env.PROVIDER !== undefined && env.LOOKUP_PROVIDERS !== undefined && env.LOOKUP_PROVIDERS.trim() !== env.PROVIDER) {
    problems.push(`  - PROVIDER=${JSON.stringify(env.PROVIDER)}: a shorthand for LOOKUP_PROVIDERS=${env.PROVIDER}, which is set to ${JSON.stringify(env.LOOKUP_PROVIDERS)}: set one of them`);
  }
  const parsed = parseLookupProviders(env.LOOKUP_PROVIDERS ?? env.PROVIDER ?? 'sandbox', withoutBlanks);
  problems.push(...parsed.problems);
  env.lookupProviderEntries = parsed.entries;
  if (env.LOOKUP_ROUTING !== undefined) {
    const routing = parseLookupRouting(
      env.LOOKUP_ROUTING,
      env.lookupProviderEntries.map((entry) => entry.id),
      BUILT_IN_CHECKS.map((check) => check.name),
    );
    problems.push(...routing.problems);
    env.lookupRouting = routing.rules;
  }
  if (Number.isInteger(env.LOOKUP_DEMOTE_MIN_CALLS) && Number.isInteger(env.LOOKUP_DEMOTE_WINDOW_CALLS) && env.LOOKUP_DEMOTE_MIN_CALLS > env.LOOKUP_DEMOTE_WINDOW_CALLS) {
    problems.push(
      `  - LOOKUP_DEMOTE_MIN_CALLS=${env.LOOKUP_DEMOTE_MIN_CALLS}: must not exceed LOOKUP_DEMOTE_WINDOW_CALLS (${env.LOOKUP_DEMOTE_WINDOW_CALLS}), or no provider is ever demoted`,
    );
  }
  if (problems.length > 0) throw new ConfigurationError(`Invalid configuration:\n${problems.join('\n')}`);
  if (env.NODE_ENV === 'production' && !env.DATA_HASH_KEY) throw new ConfigurationError(DATA_HASH_KEY_REQUIRED);
  return env;
}
