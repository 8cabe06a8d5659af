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
import { parseRiskDestinations } from './risk-destinations';
import { UPSTREAM_ADAPTER_NAMES, type UpstreamAdapterName } from './upstream-adapters';
import { Doc } from './variable-doc';
import { BUILT_IN_CHECKS } from '../checks/built-in-checks';
import { productionAdminTokenProblem } from './admin-token';

/** A string the given parser accepts (the parser, not a regex, is the one definition of the format). */
function ParsesWith(parse: (raw: string) => unknown, message: string, options?: ValidationOptions): PropertyDecorator {
  return ValidateBy({ name: 'parsesWith', validator: { validate: (value) => typeof value === 'string' && parse(value) !== undefined, defaultMessage: () => message } }, options);
}

/** A TCP port, 1 to 65535, as written in a list. */
const PORT = '([1-9]\\d{0,3}|[1-5]\\d{4}|6[0-4]\\d{3}|65[0-4]\\d{2}|655[0-2]\\d|6553[0-5])';

/** What a callback variable means when unset (applied in AppConfig, after its deprecated name). */
export const CALLBACK_DEFAULTS = {
  CALLBACK_TIMEOUT_MS: 5000,
  CALLBACK_RETRIES: 8,
  CALLBACK_RETRY_DELAY_SECONDS: 5,
  CALLBACK_ALLOW_PRIVATE_NETWORKS: 'false',
} as const;

/**
 * Every environment variable the service reads, with its default and its description (`@Doc`). This
 * class is the one place that knows the names; the rest of the code receives the typed AppConfig built
 * from it. docs/operations.md's configuration reference and .env.example are generated from it
 * (npm run docs), in its order.
 * Numbers are annotated `: number` on purpose: when compiled file by file (ts-node transpile-only,
 * which runs the admin CLI) an inferred type emits no `design:type`, and "3000" would stay a string.
 */
export class EnvironmentVariables {
  @Doc({
    section: 'Service',
    text: '`development`, `production` or `test`. `production` requires `DATA_HASH_KEY` and makes the operations endpoints private by default.',
  })
  @IsOptional() @IsIn(['development', 'production', 'test'])
  NODE_ENV: 'development' | 'production' | 'test' = 'development';

  @Doc({ text: 'HTTP port.' })
  @IsInt() @Min(0) @Max(65535)
  PORT: number = 3000;

  @Doc({ text: 'Interface to listen on.' })
  @IsString()
  HOST: string = '0.0.0.0';

  @Doc({
    section: 'PostgreSQL',
    text: 'PostgreSQL URL (`postgres://user:pass@host:5432/db`).',
    unset: 'the embedded PostgreSQL, for development',
    example: 'postgres://user:password@host:5432/phone_filter',
  })
  @IsOptional() @Matches(/^postgres(ql)?:\/\/.+/, { message: 'DATABASE_URL must be a postgres:// URL' })
  DATABASE_URL?: string;

  @Doc({ text: 'Connections per instance (the bulk queue opens up to `BULK_PARALLEL_CHUNKS` + 4 more).' })
  @IsInt() @Min(1) @Max(500)
  DATABASE_POOL_SIZE: number = 20;

  @Doc({
    text: 'How long a request waits for a database connection (a free one of the pool, or a new one opened) before its 503. A new connection that does not open within it marks the database unreachable: requests then get their 503 at once until a probe finds it back.',
  })
  @IsInt() @Min(100) @Max(120_000)
  DATABASE_CONNECT_TIMEOUT_MS: number = 5000;

  @Doc({
    text: 'How the charge and settle statements of every call run: `named` prepared statements (planned once per connection), `unnamed` (behind a pooler in transaction mode without prepared-statement support: PgBouncer < 1.21, RDS Proxy), or `auto`: named unless start-up finds that named statements do not survive between transactions, and unnamed from the first sign of it at run time.',
  })
  @IsIn(['named', 'unnamed', 'auto'])
  DATABASE_PREPARED_STATEMENTS: 'named' | 'unnamed' | 'auto' = 'auto';

  @Doc({
    text: 'Data folder of the embedded PostgreSQL (when `DATABASE_URL` is unset).',
    unset: '`.data/pg` in the checkout; as root in a checkout the postgres user cannot enter, `/var/lib/phone-filter/<checkout>-<hash>/pg`',
    example: '.data/pg',
  })
  @IsOptional() @IsString()
  EMBEDDED_PG_DIR?: string;

  @Doc({
    section: 'Redis',
    text: 'Redis for what several instances share: the lookup cache, rate-limit counts, key revocations. Required as soon as two instances run.',
    unset: 'in memory (one instance)',
    example: 'redis://127.0.0.1:6379',
  })
  @IsOptional() @Matches(/^rediss?:\/\/.+/, { message: 'REDIS_URL must be a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  @Doc({
    text: 'The most one API request waits on Redis in all (plan limit, cache reads and write together); past it the request goes on without Redis, as when Redis is down.',
  })
  @IsInt() @Min(10) @Max(10_000)
  REDIS_CALL_BUDGET_MS: number = 500;

  @Doc({
    section: 'Admin API',
    text: 'Bearer token of the admin API `/admin/v1` (at least 16 characters; use 24 random bytes or more, e.g. `openssl rand -hex 24`). With `NODE_ENV=production` the service refuses to start with a token shorter than 32 characters, of fewer than 10 different ones, or a placeholder of the examples (like this one).',
    unset: 'the admin API answers 404 everywhere',
    example: 'change-me-to-a-long-random-string',
  })
  @IsOptional() @IsString() @MinLength(16, { message: 'ADMIN_TOKEN must be at least 16 characters' })
  ADMIN_TOKEN?: string;

  @Doc({
    section: 'Lookup providers',
    text: "One upstream: `PROVIDER=<adapter>` is a shorthand for `LOOKUP_PROVIDERS=<adapter>`, whose settings are `<ID>_*` with the adapter's name as the id (`PROVIDER=hlr-lookups`: `HLR_LOOKUPS_KEY`, `HLR_LOOKUPS_SECRET`). Set this or `LOOKUP_PROVIDERS`, not both.",
    unset: 'the sandbox, unless `LOOKUP_PROVIDERS` is set',
    example: 'sandbox',
  })
  @IsOptional() @IsIn(UPSTREAM_ADAPTER_NAMES)
  PROVIDER?: UpstreamAdapterName;

  @Doc({ text: 'Deadline of one upstream request, over its whole answer (headers and body, however it trickles in).' })
  @IsInt() @Min(50) @Max(60000)
  PROVIDER_TIMEOUT_MS: number = 3000;

  @Doc({
    text: 'How often each instance probes its upstreams in the background. `/health/ready` answers from the last probe and the breakers\' and router\'s current state, never waiting on an upstream.',
  })
  @IsInt() @Min(1000) @Max(3_600_000)
  READINESS_PROBE_INTERVAL_MS: number = 10_000;

  @Doc({ text: 'Retries of an upstream request on connection errors only (never on timeouts or HTTP errors).' })
  @IsInt() @Min(0) @Max(5)
  PROVIDER_RETRIES: number = 1;

  @Doc({
    text: "Share of the calls of the window that failed for the upstream's health (transport errors, timeouts, 5xx) above which its circuit breaker opens.",
  })
  @IsNumber() @Min(0.01) @Max(0.99)
  PROVIDER_BREAKER_FAILURE_RATE: number = 0.5;

  @Doc({ text: "The breaker's window, in time: calls older than this never count, however idle the service was." })
  @IsInt() @Min(1000) @Max(600000)
  PROVIDER_BREAKER_WINDOW_MS: number = 10000;

  @Doc({ text: 'Calls the window must hold before the breaker may open.' })
  @IsInt() @Min(1) @Max(100000)
  PROVIDER_BREAKER_MIN_CALLS: number = 20;

  @Doc({ text: 'How long the circuit stays open before a trial call.' })
  @IsInt() @Min(100) @Max(600000)
  PROVIDER_BREAKER_HALF_OPEN_MS: number = 10000;

  @Doc({ text: 'The biggest upstream answer read; a bigger one is cut off as it arrives (memory stays bounded) and the call refunded.' })
  @IsInt() @Min(1024) @Max(64 * 1024 * 1024)
  PROVIDER_MAX_RESPONSE_BYTES: number = 1024 * 1024;

  /**
   * Each check's price (`PRICE_<CHECK>`, credits per call) and cache lifetime (`CACHE_TTL_<CHECK>_SECONDS`):
   * the variable names and defaults are in the check's definition (src/checks/), not here; any set value is
   * validated by validateEnvironment (an integer, prices 0 to 1,000,000) and read by the CheckRegistry.
   */
  [checkVariable: `PRICE_${string}` | `CACHE_TTL_${string}`]: number | undefined;

  @Doc({
    text: 'Several upstreams, with failover: provider ids in priority order (`hlr-lookups,backup`); ids joined by `|` are equals, asked cheapest first by `<ID>_PRICE` (`a|b,c`). Each id is configured by the variables below.',
    unset: "`PROVIDER`'s one upstream",
    example: 'hlr-lookups,backup',
    then: 'each provider',
  })
  @IsOptional() @IsString()
  LOOKUP_PROVIDERS?: string;

  @Doc({
    text: 'Routing rules over `LOOKUP_PROVIDERS` (JSON): the order per check and per country (calling code or ISO 3166 code), and the data-residency allow-list.',
    unset: "`LOOKUP_PROVIDERS`' order for every check and number",
    example: '{"countries":{"1":["backup"]}}',
  })
  @IsOptional() @IsString()
  LOOKUP_ROUTING?: string;

  @Doc({
    text: 'The time one check may take over every provider and attempt: once spent, the providers not yet asked are skipped and the attempt under way is cut to what remains (503, refunded).',
  })
  @IsInt() @Min(100) @Max(120000)
  LOOKUP_CALL_BUDGET_MS: number = 8000;

  @Doc({ section: 'Demotion by health (several upstreams)', text: 'Demotion by health: attempts older than this are forgotten.' })
  @IsInt() @Min(1000) @Max(600000)
  LOOKUP_DEMOTE_WINDOW_MS: number = 30000;

  @Doc({ text: 'At most the last this many attempts of a provider on a lane are kept.' })
  @IsInt() @Min(1) @Max(500)
  LOOKUP_DEMOTE_WINDOW_CALLS: number = 20;

  @Doc({ text: 'Fewer attempts in the window: no verdict, not demoted (at most `LOOKUP_DEMOTE_WINDOW_CALLS`).' })
  @IsInt() @Min(1) @Max(500)
  LOOKUP_DEMOTE_MIN_CALLS: number = 10;

  @Doc({
    text: "This share of the window's attempts failing for the upstream's health (timeouts, connection errors, 5xx, answers off the schema) demotes the provider: asked after the healthy ones, never skipped.",
  })
  @IsNumber() @Min(0.01) @Max(1)
  LOOKUP_DEMOTE_FAILURE_RATE: number = 0.5;

  @Doc({ text: 'A median attempt duration at or above this demotes the provider.' })
  @IsInt() @Min(10) @Max(120000)
  LOOKUP_DEMOTE_LATENCY_MS: number = 2000;

  /** LOOKUP_ROUTING as validated (set by validateEnvironment, not read from the environment). */
  lookupRouting?: RoutingRules;

  /** The upstreams of LOOKUP_PROVIDERS (or PROVIDER) as validated (set by validateEnvironment, not read from the environment). */
  lookupProviderEntries: ProviderEntry[] = [];

  @Doc({
    section: 'Prices and the lookup cache',
    text: 'Size of the in-memory lookup cache (without Redis), or of the in-process tier in front of Redis.',
  })
  @IsInt() @Min(1)
  CACHE_MAX_ENTRIES: number = 100_000;

  @Doc({ text: "Prefix of the lookup cache's Redis keys (lets several deployments or test runs share one Redis).", then: 'each check' })
  @IsString() @Matches(/^[A-Za-z0-9:_.-]{1,64}$/, { message: 'CACHE_KEY_PREFIX must be 1 to 64 of A-Z a-z 0-9 : _ . -' })
  CACHE_KEY_PREFIX: string = 'phone-filter:lookup:';

  @Doc({
    section: 'Credits and rate limits',
    text: 'A charge whose call never answered (the process died) is refunded by the sweep after this, and a retry may then take over its Idempotency-Key. At least the longest call: providers × (`PROVIDER_RETRIES` + 1) × `PROVIDER_TIMEOUT_MS` + 5 s.',
  })
  @IsInt() @Min(5) @Max(86400)
  UNSETTLED_CHARGE_REFUND_AFTER_SECONDS: number = 60;

  @Doc({ text: 'Failed authentications allowed per client address, kind of credential and window; past it a wrong key or token gets 429.' })
  @IsInt() @Min(1) @Max(100000)
  IP_RATE_LIMIT: number = 20;

  @Doc({ text: 'That window.' })
  @IsInt() @Min(1) @Max(3600)
  IP_RATE_WINDOW_SECONDS: number = 1;

  @Doc({ text: 'Prefix of the rate-limit Redis keys (lets several deployments or test runs share one Redis).' })
  @Matches(/^[A-Za-z0-9_:.-]{1,64}$/, { message: 'RATE_LIMIT_REDIS_PREFIX must be 1 to 64 letters, digits, _ : . or -' })
  RATE_LIMIT_REDIS_PREFIX: string = 'pf:rl:';

  @Doc({
    section: 'Risk verdict',
    text: "Prefix of the risk verdict's counter keys in Redis (with `REDIS_URL`; without it the counters live in each instance's memory). docs/sms-pumping.md.",
  })
  @Matches(/^[A-Za-z0-9_:.-]{1,64}$/, { message: 'RISK_REDIS_PREFIX must be 1 to 64 letters, digits, _ : . or -' })
  RISK_REDIS_PREFIX: string = 'pf:risk:';

  @Doc({
    text: 'The destination risk table of the risk verdict, replacing the default: a JSON object `{ "<country or +prefix>": <risk 0-100> }`, inline or the path of a JSON file (docs/sms-pumping.md, "The destination table").',
    unset: 'the default table (src/risk/destination-defaults.ts)',
    example: '/etc/phone-filter/destinations.json',
  })
  @IsOptional() @IsString()
  RISK_DESTINATIONS?: string;

  /** RISK_DESTINATIONS as validated (set by validateEnvironment, not read from the environment). */
  riskDestinations?: Record<string, number>;

  @Doc({ section: 'Bulk jobs', text: 'Bulk lookups in flight at once per instance, across all jobs.' })
  @IsInt() @Min(1) @Max(1000)
  BULK_CONCURRENCY: number = 50;

  @Doc({ text: 'Distinct numbers per queue job: the unit of work an instance takes, and the most a crash makes redo.' })
  @IsInt() @Min(1) @Max(1000)
  BULK_CHUNK_SIZE: number = 100;

  @Doc({ text: 'Chunks one instance works on at once (sharing `BULK_CONCURRENCY`).' })
  @IsInt() @Min(1) @Max(32)
  BULK_PARALLEL_CHUNKS: number = 4;

  @Doc({ text: 'The last resort: a chunk still running this long after it started is handed out again, even if its worker still renews its lease.' })
  @IsInt() @Min(2) @Max(3600)
  BULK_CHUNK_TIMEOUT_SECONDS: number = 120;

  @Doc({
    text: "A chunk whose worker stopped renewing its lease (a dead instance) is handed out again after this; so is a chunk active in the queue with no lease (counted from the chunk's start).",
  })
  @IsInt() @Min(2) @Max(3600)
  BULK_CHUNK_LEASE_SECONDS: number = 10;

  @Doc({
    text: 'Attempts (1 s apart) of a chunk that keeps failing, after the first; then its numbers still without an answer are answered `PROVIDER_UNAVAILABLE` and refunded, and the job completes.',
  })
  @IsInt() @Min(0) @Max(100_000)
  BULK_CHUNK_RETRIES: number = 1000;

  @Doc({ text: 'How often the queue looks for expired chunks.' })
  @IsInt() @Min(1) @Max(3600)
  BULK_QUEUE_MAINTENANCE_SECONDS: number = 10;

  @Doc({ text: 'How often an idle worker polls the queue (at least 0.5).' })
  @IsNumber() @Min(0.5) @Max(60)
  BULK_POLL_INTERVAL_SECONDS: number = 1;

  @Doc({ text: 'Name of the queue of bulk chunks; instances with the same name share the work.' })
  @Matches(/^[A-Za-z0-9_.-]{1,50}$/, { message: 'BULK_QUEUE_NAME must be 1 to 50 letters, digits, _ . or -' })
  BULK_QUEUE_NAME: string = 'bulk-lookups';

  @Doc({ text: "PostgreSQL schema of the queue's tables." })
  @Matches(/^[a-z_][a-z0-9_]{0,49}$/, { message: 'BULK_QUEUE_SCHEMA must be a lower-case SQL identifier' })
  BULK_QUEUE_SCHEMA: string = 'pgboss';

  @Doc({
    section: 'Callbacks',
    text: 'A callback receiver must answer 2xx within this (every delivery: account events to `webhook_url`, bulk and watchlist `callback_url`).',
    default: CALLBACK_DEFAULTS.CALLBACK_TIMEOUT_MS,
  })
  @IsOptional() @IsInt() @Min(100) @Max(60000)
  CALLBACK_TIMEOUT_MS?: number;

  @Doc({ text: 'Retries of a failed callback before it is given up (`failed`).', default: CALLBACK_DEFAULTS.CALLBACK_RETRIES })
  @IsOptional() @IsInt() @Min(0) @Max(30)
  CALLBACK_RETRIES?: number;

  @Doc({
    text: 'First retry delay of a failed callback, doubling (plus up to a quarter at random) at each retry.',
    default: CALLBACK_DEFAULTS.CALLBACK_RETRY_DELAY_SECONDS,
  })
  @IsOptional() @IsInt() @Min(1) @Max(3600)
  CALLBACK_RETRY_DELAY_SECONDS?: number;

  @Doc({
    text: '`true` lets callback URLs point at loopback, private and link-local addresses (development, tests, a receiver inside your own network); `false`: public addresses only, checked at submission and again at each delivery.',
    default: CALLBACK_DEFAULTS.CALLBACK_ALLOW_PRIVATE_NETWORKS,
  })
  @IsOptional() @IsIn(['true', 'false'], { message: 'CALLBACK_ALLOW_PRIVATE_NETWORKS must be true or false' })
  CALLBACK_ALLOW_PRIVATE_NETWORKS?: 'true' | 'false';

  @Doc({
    text: 'The ports a `callback_url` or `webhook_url` may name, comma-separated, or `any` (a URL without a port uses 80 for http, 443 for https); another port is refused with a 400 at submission and never called. Not checked with `CALLBACK_ALLOW_PRIVATE_NETWORKS=true`.',
  })
  @Matches(new RegExp(`^(any|${PORT}(,${PORT})*)$`), { message: 'CALLBACK_ALLOWED_PORTS must be a comma-separated list of ports (e.g. 80,443,8443) or any' })
  CALLBACK_ALLOWED_PORTS: string = '80,443';

  @Doc({
    text: 'Former name of `CALLBACK_TIMEOUT_MS`, still read when that is unset (said in one warning line at start-up).',
    deprecatedFor: 'CALLBACK_TIMEOUT_MS',
  })
  @IsOptional() @IsInt() @Min(100) @Max(60000)
  BULK_WEBHOOK_TIMEOUT_MS?: number;
  @Doc({ text: 'Former name of `CALLBACK_RETRIES`, still read when that is unset.', deprecatedFor: 'CALLBACK_RETRIES' })
  @IsOptional() @IsInt() @Min(0) @Max(30)
  BULK_WEBHOOK_RETRIES?: number;
  @Doc({ text: 'Former name of `CALLBACK_RETRY_DELAY_SECONDS`, still read when that is unset.', deprecatedFor: 'CALLBACK_RETRY_DELAY_SECONDS' })
  @IsOptional() @IsInt() @Min(1) @Max(3600)
  BULK_WEBHOOK_RETRY_DELAY_SECONDS?: number;
  @Doc({ text: 'Former name of `CALLBACK_ALLOW_PRIVATE_NETWORKS`, still read when that is unset.', deprecatedFor: 'CALLBACK_ALLOW_PRIVATE_NETWORKS' })
  @IsOptional() @IsIn(['true', 'false'], { message: 'BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS must be true or false' })
  BULK_CALLBACK_ALLOW_PRIVATE_NETWORKS?: 'true' | 'false';

  @Doc({ text: 'How often each instance delivers the callbacks that are due (the outbox).' })
  @IsInt() @Min(50) @Max(60000)
  EVENTS_POLL_INTERVAL_MS: number = 1000;

  @Doc({ section: 'Watchlists', text: 'Watchlist lookups in flight at once per instance.' })
  @IsInt() @Min(1) @Max(1000)
  WATCHLIST_CONCURRENCY: number = 50;

  @Doc({ text: 'Entries of a round charged and checked together: what a crash may leave to resume, at most.' })
  @IsInt() @Min(1) @Max(10_000)
  WATCHLIST_CHUNK_SIZE: number = 500;

  @Doc({ text: 'How often an instance looks for due rounds.' })
  @IsInt() @Min(50) @Max(60_000)
  WATCHLIST_POLL_INTERVAL_MS: number = 1000;

  @Doc({ text: 'A round whose instance stopped renewing its lease this long (a crash) is resumed by another.' })
  @IsInt() @Min(2) @Max(3600)
  WATCHLIST_LEASE_SECONDS: number = 30;

  @Doc({
    text: 'Instances work the watchlists of their group (a watchlist joins the group of the instance that created it): one group per deployment.',
  })
  @Matches(/^[A-Za-z0-9_.-]{1,50}$/, { message: 'WATCHLIST_SCHEDULE_GROUP must be 1 to 50 letters, digits, _ . or -' })
  WATCHLIST_SCHEDULE_GROUP: string = 'default';

  @Doc({ text: '`false`: the instance serves the watchlist routes but runs no rounds.' })
  @IsIn(['true', 'false'], { message: 'WATCHLIST_WORKER must be true or false' })
  WATCHLIST_WORKER: 'true' | 'false' = 'true';

  @Doc({
    section: 'Personal data',
    text: 'Key of the keyed hashes kept instead of phone numbers (lookup cache keys, Idempotency-Key request hashes, erasure audit rows): at least 32 characters (`openssl rand -hex 32`), the same on every instance and kept across upgrades. Required with `NODE_ENV=production`. Changing it forgets the lookup cache and the Idempotency-Keys in flight.',
    unset: 'outside production, one is generated on first start into `.data/data-hash-key`',
  })
  @IsOptional() @IsString() @MinLength(32, { message: 'DATA_HASH_KEY must be at least 32 characters (e.g. openssl rand -hex 32)' })
  DATA_HASH_KEY?: string;

  @Doc({ text: "Bulk results (the entries) are deleted this many days after their job completed; the job's counts and charges stay." })
  @IsInt() @Min(1) @Max(3650)
  RETENTION_BULK_ENTRIES_DAYS: number = 30;

  @Doc({ text: 'Ledger rows older than this keep their phone number only masked (amounts and references untouched).' })
  @IsInt() @Min(1) @Max(3650)
  RETENTION_LEDGER_PHONE_DAYS: number = 90;

  @Doc({ text: 'Removed watchlist entries, and the entries of deleted watchlists, are deleted (with their changes) after this.' })
  @IsInt() @Min(1) @Max(3650)
  RETENTION_WATCHLIST_REMOVED_DAYS: number = 30;

  @Doc({ text: 'Changes detected for entries still watched are kept this long.' })
  @IsInt() @Min(1) @Max(3650)
  RETENTION_WATCHLIST_CHANGES_DAYS: number = 365;

  @Doc({ text: 'Watchlist rounds (their counts) are kept this long after they started.' })
  @IsInt() @Min(1) @Max(3650)
  RETENTION_WATCHLIST_ROUNDS_DAYS: number = 365;

  @Doc({ text: "Idempotency-Key rows are deleted this many hours after their key's 24 h life ended, charged or not." })
  @IsInt() @Min(0) @Max(8760)
  RETENTION_IDEMPOTENCY_GRACE_HOURS: number = 24;

  @Doc({ text: 'Feedback rows of the risk verdict (`POST /api/v1/risk/feedback`) are deleted this many days after they were given.' })
  @IsInt() @Min(1) @Max(3650)
  RETENTION_RISK_FEEDBACK_DAYS: number = 30;

  @Doc({ text: 'The admin audit trail is kept this long.' })
  @IsInt() @Min(1) @Max(36500)
  RETENTION_ADMIN_AUDIT_DAYS: number = 400;

  @Doc({ text: 'Rows one retention statement touches at most (one short transaction each).' })
  @IsInt() @Min(1) @Max(100_000)
  RETENTION_BATCH_SIZE: number = 5000;

  @Doc({ text: 'How often an instance runs the retention jobs (each instance may; they never do a row twice).' })
  @IsInt() @Min(10) @Max(86_400)
  RETENTION_INTERVAL_SECONDS: number = 3600;

  @Doc({ section: 'Logs and shutdown', text: '`fatal`, `error`, `warn`, `info`, `debug` or `silent`.' })
  @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'silent'])
  LOG_LEVEL: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'silent' = 'info';

  @Doc({
    text: '`json` (one object a line) or `pretty` (human-readable).',
    unset: '`pretty` on a terminal outside production, else `json`',
    example: 'json',
  })
  @IsOptional() @IsIn(['json', 'pretty'], { message: 'LOG_FORMAT must be json or pretty' })
  LOG_FORMAT?: 'json' | 'pretty';

  @Doc({
    text: "On SIGTERM, SIGINT or SIGHUP, how long the whole shutdown may take: a quarter of it (at most 1 s) is kept for stopping the embedded PostgreSQL, 40% (at most 5 s) for closing workers and pools, and running requests get the rest; what does not answer in time is given up on, and the exit code is 1. Keep it shorter than your orchestrator's kill grace period.",
  })
  @IsInt() @Min(0) @Max(600_000)
  SHUTDOWN_TIMEOUT_MS: number = 10000;

  @Doc({
    section: 'HTTP edge',
    text: '`*` or comma-separated exact origins allowed to call the API from a browser.',
    unset: 'no CORS headers (browsers on other origins are refused)',
    example: 'https://app.example.com,http://localhost:5173',
  })
  @IsOptional()
  @ParsesWith(parseCorsOrigins, 'CORS_ORIGINS must be * or comma-separated origins such as https://app.example.com')
  CORS_ORIGINS?: string;

  @Doc({
    text: 'Express `trust proxy`: `false`, `true`, a hop count (`1` behind one load balancer, so client addresses and per-address limits are right), or `loopback`, `linklocal`, `uniquelocal`, IPs and CIDRs, comma-separated.',
  })
  @ParsesWith(parseTrustProxy, 'TRUST_PROXY must be true, false, a number of hops, or comma-separated loopback/linklocal/uniquelocal/IP/CIDR')
  TRUST_PROXY: string = 'false';

  @Doc({ text: 'Bytes of a body, once inflated, read for a request without a valid API key or admin token (it is answered 401 anyway).' })
  @IsInt() @Min(0) @Max(1024 * 1024)
  UNAUTHENTICATED_BODY_LIMIT_BYTES: number = 4096;

  @Doc({ text: "A client must send a request's headers within this (408 otherwise; Node's own is 60 s)." })
  @IsInt() @Min(100) @Max(600_000)
  HTTP_HEADERS_TIMEOUT_MS: number = 10_000;

  @Doc({ text: "A client must send its whole request, body included, within this (Node's own is 300 s)." })
  @IsInt() @Min(100) @Max(3_600_000)
  HTTP_REQUEST_TIMEOUT_MS: number = 30_000;

  @Doc({
    text: "An idle keep-alive connection is closed after this; behind a load balancer, set it above the balancer's idle timeout (AWS ALB: 60 s, so `65000`).",
  })
  @IsInt() @Min(100) @Max(3_600_000)
  HTTP_KEEP_ALIVE_TIMEOUT_MS: number = 5_000;

  @Doc({ text: 'Open client connections per instance; new ones past it are closed at once. `0`: no cap.' })
  @IsInt() @Min(0) @Max(1_000_000)
  HTTP_MAX_CONNECTIONS: number = 2000;

  @Doc({
    text: "How long a paid call (`/filter`, `/risk`, a bulk submission) may wait, from its request's arrival, before it is charged: past it, it is shed with 503 `SERVICE_UNAVAILABLE` and `Retry-After`, not charged (an overloaded instance answers at once instead of working calls their clients have given up on). A call whose client has closed the connection before its charge is dropped whatever its wait.",
  })
  @IsInt() @Min(100) @Max(600_000)
  CALL_QUEUE_DEADLINE_MS: number = 10_000;

  @Doc({
    section: 'Operations endpoints',
    text: '`public` or `private`: `/docs`, `/docs-json`, `/metrics` and the detail of `/health/ready` need `Authorization: Bearer <ADMIN_TOKEN>` (`/metrics` also takes `METRICS_TOKEN`); the bare readiness status stays public.',
    unset: '`private` with `NODE_ENV=production`, `public` otherwise',
    example: 'private',
  })
  @IsOptional() @IsIn(['public', 'private'], { message: 'OPS_ENDPOINTS must be public or private' })
  OPS_ENDPOINTS?: 'public' | 'private';

  @Doc({
    text: 'The bearer token a Prometheus scraper sends for `/metrics` when `OPS_ENDPOINTS` is private (at least 16 characters).',
    unset: 'only the `ADMIN_TOKEN` opens a private `/metrics`',
  })
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
  if (env.RISK_DESTINATIONS !== undefined) {
    const destinations = parseRiskDestinations(env.RISK_DESTINATIONS);
    problems.push(...destinations.problems);
    env.riskDestinations = destinations.table;
  }
  if (Number.isInteger(env.LOOKUP_DEMOTE_MIN_CALLS) && Number.isInteger(env.LOOKUP_DEMOTE_WINDOW_CALLS) && env.LOOKUP_DEMOTE_MIN_CALLS > env.LOOKUP_DEMOTE_WINDOW_CALLS) {
    problems.push(
      `  - LOOKUP_DEMOTE_MIN_CALLS=${env.LOOKUP_DEMOTE_MIN_CALLS}: must not exceed LOOKUP_DEMOTE_WINDOW_CALLS (${env.LOOKUP_DEMOTE_WINDOW_CALLS}), or no provider is ever demoted`,
    );
  }
  if (problems.length > 0) throw new ConfigurationError(`Invalid configuration:\n${problems.join('\n')}`);
  if (env.NODE_ENV === 'production' && !env.DATA_HASH_KEY) throw new ConfigurationError(DATA_HASH_KEY_REQUIRED);
  const adminTokenProblem = env.NODE_ENV === 'production' && env.ADMIN_TOKEN !== undefined ? productionAdminTokenProblem(env.ADMIN_TOKEN) : undefined;
  if (adminTokenProblem) throw new ConfigurationError(adminTokenProblem);
  return env;
}
