import { Logger, OnModuleDestroy } from '@nestjs/common';
import {
  BrokenCircuitError,
  circuitBreaker,
  CircuitBreakerPolicy,
  CircuitState,
  handleType,
  handleWhen,
  IsolatedCircuitError,
  retry,
  SamplingBreaker,
  TaskCancelledError,
  timeout,
  TimeoutStrategy,
  wrap,
} from 'cockatiel';
import http from 'node:http';
import https from 'node:https';
import type { Registry } from 'prom-client';
import type { z } from 'zod';
import { CHECK_NAMES } from '../../checks/checks';
import type { BreakerOptions } from '../../config/app-config';
import { CircuitBreakerState, Lane, LANES, LookupProvider, ProviderUnavailableError } from '../lookup-provider';
import { NetworkStatusAnswer, NumberTypeAnswer, PortabilityAnswer } from '../lookup.types';
import { networkStatusFrom, numberTypeFrom, portabilityFrom, unknownNumberType, UpstreamFailure, UpstreamTally } from './hlr-lookups.answers';
import { digestHeaders, HLR_PATHS, rateLimitWaitMs } from './hlr-lookups.protocol';
import { registerUpstreamTallyMetrics } from './hlr-lookups.metrics';
import { errorAnswer, firstIssue, hlrLookupAnswer, mnpLookupAnswer, ntLookupAnswer, NtLookupAnswer } from './hlr-lookups.schema';

export interface HlrLookupsOptions {
  /** API base, e.g. https://www.hlr-lookups.com/api/v2 (no trailing slash). */
  baseUrl: string;
  key: string;
  secret: string;
  timeoutMs: number;
  /** Retries after a connection error (refused, reset, DNS); never after a timeout or an HTTP error. */
  retries: number;
  breaker: BreakerOptions;
  /** Bulk numbers looked up at once (BULK_CONCURRENCY): the bulk lane's pool holds a connection for each of their checks. */
  bulkConcurrency: number;
}

/** Socket-level errors where the request most likely never reached the upstream: worth one retry. */
const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);

class UpstreamConnectionError extends UpstreamFailure {
  constructor(message: string) {
    super(message, 'network', 'network');
  }
}

/**
 * The real upstream: HLR Lookups API v2 over HTTP(S) with keep-alive, every request HMAC-signed.
 * Each call runs inside circuit breaker → retry (connection errors only) → timeout (per attempt);
 * each answer is then checked against the documented schema and mapped (hlr-lookups.answers.ts).
 * The breaker opens on the upstream's health, not on numbers: a failure rate over a sliding window
 * with a minimum number of calls, counting transport errors, timeouts, 5xx and bodies that are not
 * JSON only. A lookup the upstream could not complete, an answer that breaks the schema, and 4xx
 * (credentials, rate limit, a bad request) are failures of that call only. Live and bulk calls use
 * separate lanes: each its own breaker and connection pool. After a 429 no request is sent until
 * its Retry-After has passed. Every failure leaves as ProviderUnavailableError with a reason.
 */
export class HlrLookupsAdapter extends LookupProvider implements OnModuleDestroy {
  readonly name = 'hlr-lookups';
  readonly simulated = false;

  private readonly base: URL;
  private readonly transport: typeof http | typeof https;
  private readonly lanes: Record<Lane, { agent: http.Agent; breaker: CircuitBreakerPolicy; policy: ReturnType<HlrLookupsAdapter['lanePolicy']> }>;
  private readonly probePolicy;
  /** Upstream cost and failures, read by /metrics at scrape time. */
  readonly tally = new UpstreamTally();
  private readonly logger = new Logger('HlrLookupsAdapter');
  /** What was already logged (a schema break by endpoint and field, an unknown number_type): one line each, not one per call. */
  private readonly loggedOnce = new Set<string>();
  private rateLimitedUntil = 0;

  constructor(private readonly options: HlrLookupsOptions) {
    super();
    this.base = new URL(options.baseUrl.replace(/\/+$/, ''));
    const secure = this.base.protocol === 'https:';
    this.transport = secure ? https : http;
    const sockets: Record<Lane, number> = { interactive: 256, bulk: options.bulkConcurrency * CHECK_NAMES.length };
    this.lanes = Object.fromEntries(
      LANES.map((lane) => {
        const agentOptions = { keepAlive: true, maxSockets: sockets[lane], maxFreeSockets: Math.min(64, sockets[lane]), scheduling: 'lifo' as const };
        const breaker = circuitBreaker(handleWhen(isUpstreamUnhealthy), {
          halfOpenAfter: options.breaker.halfOpenMs,
          breaker: samplingBreaker(options.breaker),
        });
        return [lane, { agent: secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions), breaker, policy: this.lanePolicy(breaker) }];
      }),
    ) as HlrLookupsAdapter['lanes'];
    this.probePolicy = timeout(options.timeoutMs, TimeoutStrategy.Aggressive);
  }

  override circuitState(lane: Lane = 'interactive'): CircuitBreakerState {
    return ({ [CircuitState.Closed]: 'closed', [CircuitState.Open]: 'open', [CircuitState.HalfOpen]: 'half-open', [CircuitState.Isolated]: 'isolated' } as const)[
      this.lanes[lane].breaker.state
    ];
  }

  async networkStatus(e164: string, lane: Lane = 'interactive'): Promise<NetworkStatusAnswer> {
    return this.lookup(lane, HLR_PATHS.hlrLookup, { msisdn: e164 }, hlrLookupAnswer, networkStatusFrom);
  }

  async numberType(e164: string, lane: Lane = 'interactive'): Promise<NumberTypeAnswer> {
    return this.lookup(lane, HLR_PATHS.ntLookup, { number: e164 }, ntLookupAnswer, (answer) => {
      const result = numberTypeFrom(answer);
      this.noteUnknownNumberType(answer);
      return result;
    });
  }

  async portability(e164: string, lane: Lane = 'interactive'): Promise<PortabilityAnswer> {
    return this.lookup(lane, HLR_PATHS.mnpLookup, { msisdn: e164 }, mnpLookupAnswer, portabilityFrom);
  }

  /** GET /auth-test with the timeout only: reachability and credentials, whatever the breaker says. */
  async ping(): Promise<void> {
    try {
      await this.probePolicy.execute(({ signal }) => this.send('interactive', 'GET', HLR_PATHS.authTest, undefined, signal), new AbortController().signal);
    } catch (error) {
      throw toUnavailable(error, this.options.timeoutMs);
    }
  }

  override registerMetrics(registers: Registry[]): void {
    registerUpstreamTallyMetrics(registers, this.tally);
  }

  onModuleDestroy(): void {
    for (const lane of LANES) this.lanes[lane].agent.destroy();
  }

  /** breaker → retry (connection errors only) → timeout (per attempt), around one lane's calls. */
  private lanePolicy(breaker: CircuitBreakerPolicy) {
    const retryOnConnectionError = retry(handleType(UpstreamConnectionError), { maxAttempts: this.options.retries });
    return wrap(breaker, retryOnConnectionError, timeout(this.options.timeoutMs, TimeoutStrategy.Aggressive));
  }

  /** One lookup: the HTTP call, the schema check, then the mapping; every failure tallied once. */
  private async lookup<A extends { cost: string; error_code?: number | null }, R>(
    lane: Lane,
    path: string,
    payload: object,
    schema: z.ZodType<A>,
    map: (answer: A) => R,
  ): Promise<R> {
    try {
      const answer = this.parse(path, schema, await this.call(lane, path, payload));
      this.tally.addCost(path, answer.cost);
      const result = map(answer);
      // A completed lookup may carry an error_code as context: the answer stands, the code is counted.
      if (answer.error_code !== null && answer.error_code !== undefined) this.tally.addFailure(path, 'error_code');
      return result;
    } catch (error) {
      const failure = error instanceof ProviderUnavailableError ? error : toUnavailable(error, this.options.timeoutMs);
      this.tally.addFailure(path, failure instanceof UpstreamFailure ? failure.kind : failure.reason);
      throw failure;
    }
  }

  private async call(lane: Lane, path: string, payload: object): Promise<unknown> {
    const waitMs = this.rateLimitedUntil - Date.now();
    if (waitMs > 0) {
      throw new UpstreamFailure(`upstream rate limit: asked to wait ${Math.ceil(waitMs / 1000)} s more (HTTP 429)`, 'upstream_error', 'rate_limit_wait');
    }
    try {
      // A fresh parent signal per call: cockatiel otherwise hangs every in-flight call's listener on one shared signal.
      const parent = new AbortController().signal;
      return await this.lanes[lane].policy.execute(({ signal }) => this.send(lane, 'POST', path, payload, signal), parent);
    } catch (error) {
      throw toUnavailable(error, this.options.timeoutMs);
    }
  }

  private parse<A>(path: string, schema: z.ZodType<A>, body: unknown): A {
    const parsed = schema.safeParse(body);
    if (parsed.success) return parsed.data;
    const { field, problem } = firstIssue(parsed.error);
    this.logBreakOnce(path, field, problem);
    throw new UpstreamFailure(`upstream ${path} answer does not match the documented schema at ${field}`, 'upstream_error', 'invalid_answer');
  }

  private logBreakOnce(path: string, field: string, problem: string): void {
    this.logOnce('error', `${path} ${field}`, `upstream ${path} answer does not match the documented schema at ${field}: ${problem} (logged once per field)`);
  }

  /** An unknown number_type is answered UNKNOWN (docs/upstream-hlr-lookups.md), but never silently. */
  private noteUnknownNumberType(answer: NtLookupAnswer): void {
    const word = unknownNumberType(answer);
    if (word === null) return;
    this.tally.addFailure(HLR_PATHS.ntLookup, 'unknown_number_type');
    const shown = JSON.stringify(word.slice(0, 40));
    this.logOnce('warn', `number_type ${shown}`, `upstream ${HLR_PATHS.ntLookup} answered an unknown number_type ${shown}: answered UNKNOWN (logged once per word)`);
  }

  private logOnce(level: 'error' | 'warn', key: string, message: string): void {
    if (this.loggedOnce.has(key) || this.loggedOnce.size >= 100) return;
    this.loggedOnce.add(key);
    this.logger[level](message);
  }

  /** After a 429, hold requests back for its Retry-After (rateLimitWaitMs); the whole seconds, for the message. */
  private holdForRateLimit(retryAfter: string | undefined): number {
    const waitMs = rateLimitWaitMs(retryAfter, Date.now());
    this.rateLimitedUntil = Math.max(this.rateLimitedUntil, Date.now() + waitMs);
    return Math.ceil(waitMs / 1000);
  }

  private send(lane: Lane, method: 'GET' | 'POST', path: string, payload: object | undefined, signal: AbortSignal): Promise<unknown> {
    const body = payload === undefined ? '' : JSON.stringify(payload);
    const headers: Record<string, string | number> = {
      Accept: 'application/json',
      ...digestHeaders(this.options, path, method, body),
    };
    if (method === 'POST') {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = Buffer.byteLength(body);
    }
    return new Promise((resolve, reject) => {
      const request = this.transport.request(
        {
          protocol: this.base.protocol,
          hostname: this.base.hostname,
          port: this.base.port || undefined,
          path: `${this.base.pathname === '/' ? '' : this.base.pathname}${path}`,
          method,
          headers,
          agent: this.lanes[lane].agent,
          signal,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', (error) => reject(new ProviderUnavailableError(`upstream response broken: ${error.message}`, 'network')));
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            let body: unknown;
            try {
              body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              body = undefined;
            }
            if (status >= 200 && status < 300) {
              // GET /auth-test: the status is the answer (the SDK READMEs check the 200 only).
              if (body !== undefined || method === 'GET') return resolve(body);
              this.logBreakOnce(path, '(body)', 'not JSON, or cut short');
              return reject(new UpstreamFailure(`upstream sent invalid JSON on ${path}`, 'upstream_error', 'invalid_answer'));
            }
            const said = upstreamMessage(body);
            if (status === 401 || status === 403) {
              return reject(new UpstreamFailure(`upstream refused the credentials (HTTP ${status} on ${path}${said})`, 'unauthorized', `http_${status}`));
            }
            if (status === 429) {
              const seconds = this.holdForRateLimit(response.headers['retry-after']);
              return reject(new UpstreamFailure(`upstream rate limit (HTTP 429 on ${path}${said}): waiting ${seconds} s`, 'upstream_error', 'rate_limited'));
            }
            reject(new UpstreamFailure(`upstream answered HTTP ${status} on ${path}${said}`, 'upstream_error', `http_${status}`));
          });
        },
      );
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (signal.aborted) {
          return reject(new ProviderUnavailableError(`upstream gave no answer within ${this.options.timeoutMs} ms`, 'timeout'));
        }
        const reason = `upstream unreachable (${error.code ?? error.message}) on ${path}`;
        reject(error.code && CONNECTION_ERROR_CODES.has(error.code) ? new UpstreamConnectionError(reason) : new ProviderUnavailableError(reason, 'network'));
      });
      request.end(body);
    });
  }
}

/**
 * What counts against the upstream's health: it could not be reached or did not answer in time,
 * answered 5xx, or sent a body that is not JSON. Not: 4xx (credentials, its rate limit, a request it
 * refused) nor the failure of one number's lookup — those say nothing about the upstream for others.
 */
function isUpstreamUnhealthy(error: Error): boolean {
  if (error instanceof UpstreamFailure) return /^http_5\d\d$/.test(error.kind) || error.kind === 'invalid_answer';
  if (error instanceof ProviderUnavailableError) return error.reason === 'timeout' || error.reason === 'network';
  return true; // cockatiel's own timeout (TaskCancelledError) and anything unexpected
}

/** cockatiel's SamplingBreaker counts a minimum rate of calls; the minimum count over the window gives it. */
function samplingBreaker({ failureRate, windowMs, minCalls }: BreakerOptions): SamplingBreaker {
  return new SamplingBreaker({ threshold: failureRate, duration: windowMs, minimumRps: minCalls / (windowMs / 1000) });
}

/** The upstream's own words from an error body, for the log line (never shown to customers). */
function upstreamMessage(body: unknown): string {
  const parsed = errorAnswer.safeParse(body);
  if (!parsed.success) return '';
  const first = parsed.data.errors[0];
  const message = typeof first === 'string' ? first : (first.message ?? first.code ?? '');
  // eslint-disable-next-line no-control-regex -- an upstream string goes into our logs: keep it one short line
  return message ? `: ${message.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, 200)}` : '';
}

function toUnavailable(error: unknown, timeoutMs: number): ProviderUnavailableError {
  if (error instanceof ProviderUnavailableError) return error;
  if (error instanceof BrokenCircuitError || error instanceof IsolatedCircuitError) {
    return new ProviderUnavailableError('circuit breaker open: the upstream failed repeatedly', 'circuit_open');
  }
  if (error instanceof TaskCancelledError) return new ProviderUnavailableError(`upstream gave no answer within ${timeoutMs} ms`, 'timeout');
  return new ProviderUnavailableError(`upstream call failed: ${error instanceof Error ? error.message : String(error)}`, 'network');
}
