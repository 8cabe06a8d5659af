import { OnModuleDestroy } from '@nestjs/common';
import {
  BrokenCircuitError,
  circuitBreaker,
  CircuitBreakerPolicy,
  CircuitState,
  ConsecutiveBreaker,
  handleAll,
  handleType,
  IsolatedCircuitError,
  retry,
  TaskCancelledError,
  timeout,
  TimeoutStrategy,
  wrap,
} from 'cockatiel';
import http from 'node:http';
import https from 'node:https';
import { CircuitBreakerState, LookupProvider, ProviderUnavailableError } from '../lookup-provider';
import { ConnectionStatus, NetworkStatusAnswer, NumberTypeAnswer, PortabilityAnswer } from '../lookup.types';
import {
  digestHeaders,
  HLR_PATHS,
  HlrLookupResponse,
  lineTypeFromUpstream,
  MnpLookupResponse,
  NtLookupResponse,
} from './hlr-lookups.protocol';

export interface HlrLookupsOptions {
  /** API base, e.g. https://api.hlr-lookups.com/api/v2 (no trailing slash). */
  baseUrl: string;
  key: string;
  secret: string;
  timeoutMs: number;
  /** Retries after a connection error (refused, reset, DNS); never after a timeout or an HTTP error. */
  retries: number;
  breakerThreshold: number;
  breakerHalfOpenMs: number;
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

class UpstreamConnectionError extends ProviderUnavailableError {
  constructor(message: string) {
    super(message, 'network');
  }
}

/**
 * The real upstream: HLR Lookups API v2 over HTTP(S) with keep-alive, every request HMAC-signed.
 * Each call runs inside circuit breaker → retry (connection errors only) → timeout (per attempt).
 * Every failure leaves as ProviderUnavailableError with a reason.
 */
export class HlrLookupsAdapter extends LookupProvider implements OnModuleDestroy {
  readonly name = 'hlr-lookups';
  readonly simulated = false;

  private readonly base: URL;
  private readonly agent: http.Agent;
  private readonly transport: typeof http | typeof https;
  readonly breaker: CircuitBreakerPolicy;
  private readonly policy;
  private readonly probePolicy;

  constructor(private readonly options: HlrLookupsOptions) {
    super();
    this.base = new URL(options.baseUrl.replace(/\/+$/, ''));
    const secure = this.base.protocol === 'https:';
    this.transport = secure ? https : http;
    const agentOptions = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64, scheduling: 'lifo' as const };
    this.agent = secure ? new https.Agent(agentOptions) : new http.Agent(agentOptions);

    this.breaker = circuitBreaker(handleAll, {
      halfOpenAfter: options.breakerHalfOpenMs,
      breaker: new ConsecutiveBreaker(options.breakerThreshold),
    });
    const retryOnConnectionError = retry(handleType(UpstreamConnectionError), { maxAttempts: options.retries });
    const perAttemptTimeout = timeout(options.timeoutMs, TimeoutStrategy.Aggressive);
    this.policy = wrap(this.breaker, retryOnConnectionError, perAttemptTimeout);
    this.probePolicy = perAttemptTimeout;
  }

  override get circuitState(): CircuitBreakerState {
    return ({ [CircuitState.Closed]: 'closed', [CircuitState.Open]: 'open', [CircuitState.HalfOpen]: 'half-open', [CircuitState.Isolated]: 'isolated' } as const)[
      this.breaker.state
    ];
  }

  async networkStatus(e164: string): Promise<NetworkStatusAnswer> {
    const answer = await this.call<HlrLookupResponse>('POST', HLR_PATHS.hlrLookup, { msisdn: e164 });
    const status = toConnectionStatus(answer.connectivity_status);
    if (answer.connectivity_status === 'INVALID_MSISDN') return { status, carrier: null };
    return { status, carrier: currentNetwork(answer) };
  }

  async numberType(e164: string): Promise<NumberTypeAnswer> {
    const answer = await this.call<NtLookupResponse>('POST', HLR_PATHS.ntLookup, { number: e164 });
    return { lineType: answer.is_valid === false ? 'UNKNOWN' : lineTypeFromUpstream(answer.number_type) };
  }

  async portability(e164: string): Promise<PortabilityAnswer> {
    const answer = await this.call<MnpLookupResponse>('POST', HLR_PATHS.mnpLookup, { msisdn: e164 });
    return { isPorted: answer.is_ported === true, carrier: currentNetwork(answer) };
  }

  /** GET /auth-test with the timeout only: reachability and credentials, whatever the breaker says. */
  async ping(): Promise<void> {
    try {
      await this.probePolicy.execute(({ signal }) => this.send('GET', HLR_PATHS.authTest, undefined, signal), new AbortController().signal);
    } catch (error) {
      throw toUnavailable(error, this.options.timeoutMs);
    }
  }

  onModuleDestroy(): void {
    this.agent.destroy();
  }

  private async call<T>(method: 'GET' | 'POST', path: string, payload: object | undefined): Promise<T> {
    try {
      // A fresh parent signal per call: cockatiel otherwise hangs every in-flight call's listener on one shared signal.
      const parent = new AbortController().signal;
      return (await this.policy.execute(({ signal }) => this.send(method, path, payload, signal), parent)) as T;
    } catch (error) {
      throw toUnavailable(error, this.options.timeoutMs);
    }
  }

  private send(method: 'GET' | 'POST', path: string, payload: object | undefined, signal: AbortSignal): Promise<unknown> {
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
          agent: this.agent,
          signal,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', (error) => reject(new ProviderUnavailableError(`upstream response broken: ${error.message}`, 'network')));
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            if (status === 401 || status === 403) {
              return reject(new ProviderUnavailableError(`upstream refused the credentials (HTTP ${status} on ${path})`, 'unauthorized'));
            }
            if (status < 200 || status >= 300) {
              return reject(new ProviderUnavailableError(`upstream answered HTTP ${status} on ${path}`, 'upstream_error'));
            }
            try {
              resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
            } catch {
              reject(new ProviderUnavailableError(`upstream sent invalid JSON on ${path}`, 'upstream_error'));
            }
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

function toConnectionStatus(upstream: unknown): ConnectionStatus {
  switch (upstream) {
    case 'CONNECTED':
      return 'CONNECTED';
    case 'ABSENT':
    case 'INVALID_MSISDN':
      return 'ABSENT';
    default:
      return 'UNDETERMINED';
  }
}

function currentNetwork(answer: { is_ported?: boolean; ported_network_name?: string | null; original_network_name?: string | null }): string | null {
  const name = answer.is_ported ? (answer.ported_network_name ?? answer.original_network_name) : answer.original_network_name;
  // An upstream string is stored (jsonb refuses NUL) and shown to clients: keep it printable and short.
  // eslint-disable-next-line no-control-regex -- removing control characters is the point
  const clean = typeof name === 'string' ? name.replace(/[\u0000-\u001f\u007f]/g, '').trim().slice(0, 120) : '';
  return clean !== '' ? clean : null;
}

function toUnavailable(error: unknown, timeoutMs: number): ProviderUnavailableError {
  if (error instanceof ProviderUnavailableError) return error;
  if (error instanceof BrokenCircuitError || error instanceof IsolatedCircuitError) {
    return new ProviderUnavailableError('circuit breaker open: the upstream failed repeatedly', 'circuit_open');
  }
  if (error instanceof TaskCancelledError) return new ProviderUnavailableError(`upstream gave no answer within ${timeoutMs} ms`, 'timeout');
  return new ProviderUnavailableError(`upstream call failed: ${error instanceof Error ? error.message : String(error)}`, 'network');
}
