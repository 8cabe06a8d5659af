import {
  BrokenCircuitError,
  circuitBreaker,
  CircuitBreakerPolicy,
  CircuitState,
  handleType,
  handleWhen,
  IsolatedCircuitError,
  retry,
  TaskCancelledError,
  timeout,
  TimeoutStrategy,
  wrap,
} from 'cockatiel';
import http from 'node:http';
import https from 'node:https';
import { Clock, SystemClock } from '../../common/clock';
import type { BreakerOptions } from '../../config/app-config';
import { ClockHalfOpenAfter } from './clock-half-open';
import { rateLimitWaitMs } from './retry-after';
import { CircuitBreakerState, Lane, LANES } from '../port/lookup-provider';
import { sendUpstreamRequest, UpstreamRequest, UpstreamResponse } from './http-exchange';
import { TimeWindowBreaker } from './time-window-breaker';
import { callDeadline } from './call-deadline';
import { UpstreamConnectionError, UpstreamFailure, ProviderUnavailableError } from '../port/upstream-failure';
import { isUpstreamUnhealthy } from './unhealthy';

export interface ResilienceOptions {
  /** Deadline of one attempt, over the whole response (headers and body). */
  timeoutMs: number;
  /** Retries after a connection error (refused, reset, DNS); never after a timeout or an HTTP answer. */
  retries: number;
  breaker: BreakerOptions;
  /** The biggest answer read (PROVIDER_MAX_RESPONSE_BYTES); a bigger one is cut off and fails. */
  maxResponseBytes: number;
  /** Connections per lane: live calls, and batch work (bulk jobs and watchlist rounds). */
  sockets: Record<Lane, number>;
}

interface LaneParts {
  agent: http.Agent;
  breaker: CircuitBreakerPolicy;
  policy: ReturnType<ResilientUpstream['lanePolicy']>;
  /** After a 429 no request of this lane is sent until then (the Clock's epoch ms). */
  rateLimitedUntil: number;
}

const CIRCUIT_STATE_NAMES = {
  [CircuitState.Closed]: 'closed',
  [CircuitState.Open]: 'open',
  [CircuitState.HalfOpen]: 'half-open',
  [CircuitState.Isolated]: 'isolated',
} as const satisfies Record<CircuitState, CircuitBreakerState>;

/**
 * The resilience every HTTP upstream adapter gets, whatever its protocol: per lane a keep-alive
 * connection pool, a circuit breaker over a window in time, a 429 hold; per call breaker → retry
 * (connection errors only) → deadline (per attempt, over the whole response) and a cap on the
 * answer's size. The adapter gives the request (its protocol: path, signing, body) and a `read`
 * that turns the complete answer into its JSON or throws an UpstreamFailure; the breaker counts
 * a failure only when isUpstreamUnhealthy says the upstream itself is unwell, so that one number's
 * failure never opens it for others. Every failure leaves as ProviderUnavailableError with a reason.
 */
export class ResilientUpstream {
  private readonly base: URL;
  private readonly lanes: Record<Lane, LaneParts>;
  private readonly probePolicy;

  constructor(
    /** The provider id this upstream answers for (the label on metrics and /health/ready). */
    readonly provider: string,
    baseUrl: string,
    private readonly options: ResilienceOptions,
    /** The time of the breakers' windows and half-open trials, the 429 hold and the call budget (the injected Clock). */
    readonly clock: Clock = new SystemClock(),
  ) {
    this.base = new URL(baseUrl.replace(/\/+$/, ''));
    const secure = this.base.protocol === 'https:';
    this.lanes = Object.fromEntries(
      LANES.map((lane) => {
        const sockets = options.sockets[lane];
        const agentOptions = { keepAlive: true, maxSockets: sockets, maxFreeSockets: Math.min(64, sockets), scheduling: 'lifo' as const };
        const breaker = circuitBreaker(handleWhen(isUpstreamUnhealthy), {
          halfOpenAfter: new ClockHalfOpenAfter(clock, options.breaker.halfOpenMs),
          breaker: new TimeWindowBreaker(options.breaker, clock),
        });
        const agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);
        return [lane, { agent, breaker, policy: this.lanePolicy(breaker), rateLimitedUntil: 0 }];
      }),
    ) as Record<Lane, LaneParts>;
    this.probePolicy = timeout(options.timeoutMs, TimeoutStrategy.Aggressive);
  }

  circuitState(lane: Lane): CircuitBreakerState {
    return CIRCUIT_STATE_NAMES[this.lanes[lane].breaker.state];
  }

  /** One call through the lane's policies; `read` runs inside them, so its verdict reaches the breaker. */
  async exchange<T>(lane: Lane, request: UpstreamRequest, read: (response: UpstreamResponse) => T): Promise<T> {
    const parts = this.lanes[lane];
    const waitMs = parts.rateLimitedUntil - this.clock.now();
    if (waitMs > 0) {
      throw new UpstreamFailure(`upstream rate limit: asked to wait ${Math.ceil(waitMs / 1000)} s more (HTTP 429)`, 'upstream_error', 'rate_limit_wait');
    }
    // The call's budget (failover): none left, no request; some left, the attempt ends with it.
    const deadline = callDeadline.getStore();
    const leftMs = deadline === undefined ? Infinity : deadline - this.clock.now();
    if (leftMs <= 0) throw new UpstreamFailure('the call budget (LOOKUP_CALL_BUDGET_MS) was spent before this upstream was asked', 'timeout', 'budget_spent');
    // A fresh parent signal per call (cockatiel otherwise hangs every in-flight call's listener on one
    // shared signal), aborted when the budget's time is up by the Clock.
    const budget = new AbortController();
    const budgetTimer = Number.isFinite(leftMs) ? this.clock.timer(leftMs, () => budget.abort(new DOMException('call budget spent', 'TimeoutError'))) : undefined;
    try {
      const outcome = await parts.policy.execute(
        ({ signal }) => answeredOrRefused(this.send(lane, request, signal).then((response) => read(this.noteRateLimit(lane, request, response)))),
        budget.signal,
      );
      if ('refused' in outcome) throw outcome.refused;
      return outcome.answer;
    } catch (error) {
      throw this.toUnavailable(error);
    } finally {
      budgetTimer?.cancel();
    }
  }

  /** A request with the deadline only, whatever the breaker says (reachability for /health/ready). */
  async probe(request: UpstreamRequest, read: (response: UpstreamResponse) => unknown): Promise<void> {
    try {
      await this.probePolicy.execute(async ({ signal }) => read(await this.send('interactive', request, signal)), new AbortController().signal);
    } catch (error) {
      throw this.toUnavailable(error);
    }
  }

  close(): void {
    for (const lane of LANES) this.lanes[lane].agent.destroy();
  }

  /** breaker → retry (connection errors only) → deadline (per attempt), around one lane's calls. */
  private lanePolicy(breaker: CircuitBreakerPolicy) {
    const retryOnConnectionError = retry(handleType(UpstreamConnectionError), { maxAttempts: this.options.retries });
    return wrap(breaker, retryOnConnectionError, timeout(this.options.timeoutMs, TimeoutStrategy.Aggressive));
  }

  private send(lane: Lane, request: UpstreamRequest, signal: AbortSignal): Promise<UpstreamResponse> {
    return sendUpstreamRequest(this.base, this.lanes[lane].agent, request, { maxBytes: this.options.maxResponseBytes, signal, deadlineMs: this.options.timeoutMs });
  }

  /** A 429 holds the lane back for its Retry-After (at most 60 s), then goes to `read` like any answer. */
  private noteRateLimit(lane: Lane, request: UpstreamRequest, response: UpstreamResponse): UpstreamResponse {
    if (response.status !== 429) return response;
    const now = this.clock.now();
    const waitMs = rateLimitWaitMs(headerText(response.headers['retry-after']), now);
    const parts = this.lanes[lane];
    parts.rateLimitedUntil = Math.max(parts.rateLimitedUntil, now + waitMs);
    throw new UpstreamFailure(`upstream rate limit (HTTP 429 from ${this.provider}): waiting ${Math.ceil(waitMs / 1000)} s`, 'upstream_error', 'rate_limited');
  }

  private toUnavailable(error: unknown): ProviderUnavailableError {
    if (error instanceof ProviderUnavailableError) return error;
    if (error instanceof BrokenCircuitError || error instanceof IsolatedCircuitError) {
      return new UpstreamFailure(`circuit breaker open: the ${this.provider} upstream failed repeatedly`, 'circuit_open', 'circuit_open');
    }
    if (error instanceof TaskCancelledError) return new ProviderUnavailableError(`upstream gave no answer within ${this.options.timeoutMs} ms`, 'timeout');
    return new ProviderUnavailableError(`upstream call failed: ${error instanceof Error ? error.message : String(error)}`, 'network');
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The upstream answered, but refused this request (4xx, 429) or failed this one number: it is
 * reachable and healthy, so the breaker must count a success. Left as an error, cockatiel would count
 * nothing in the closed state and close the circuit on it after a half-open trial, whatever the
 * upstream's health; as a value it passes the breaker as a success and is thrown again outside it.
 */
async function answeredOrRefused<T>(sent: Promise<T>): Promise<{ answer: T } | { refused: unknown }> {
  try {
    return { answer: await sent };
  } catch (error) {
    if (isUpstreamUnhealthy(error)) throw error;
    return { refused: error };
  }
}
