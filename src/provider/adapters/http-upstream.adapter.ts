import { Logger, OnModuleDestroy } from '@nestjs/common';
import type { z } from 'zod';
import type { CheckAnswer, CheckOptionValues, FieldValue } from '../../checks/check-definition';
import { upstreamAdapter, type UpstreamAdapterName } from '../../config/upstream-adapters';
import { answeredNow, CircuitBreakerState, Lane, LookupProvider, notOffered, Upstream } from '../port/lookup-provider';
import { ProviderAttempts } from '../port/provider-attempts';
import { ProviderUnavailableError, UpstreamFailure } from '../port/upstream-failure';
import { UpstreamTally } from '../port/upstream-tally';
import type { UpstreamRequest, UpstreamResponse } from '../resilience/http-exchange';
import { ResilientUpstream } from '../resilience/resilient-upstream';

/** What a protocol's error body says, for the log line only (never shown to customers). */
export interface ErrorWords {
  /** The upstream's own message, one short line ('' when none). */
  text: string;
  /** Its error code, when the body has one. */
  code?: string;
}

/**
 * What every adapter of a real HTTP upstream shares: it is one Upstream (its provider id is its
 * ResilientUpstream's), answers the checks its descriptor lists (src/config/upstream-adapters.ts),
 * reports that wrapper's breakers, keeps a tally for /metrics, logs a repeated problem once, closes its
 * pools on shutdown, and does the plumbing of every request: send it through the resilience, read the
 * answer (JSON, the HTTP status), check it against the documented schema inside the exchange (so a
 * malformed 200 counts against the breaker), tally a failure once under the endpoint's name. A subclass
 * holds its protocol only: the requests, what its error bodies and refusals mean, the mapping.
 */
export abstract class HttpUpstreamAdapter extends LookupProvider implements Upstream, OnModuleDestroy {
  readonly provider: string;
  readonly simulated = false;
  /** Upstream cost and failures, read by /metrics at scrape time. */
  readonly tally = new UpstreamTally();
  /** Every answer() by check and how it ended, read by /metrics at scrape time. */
  readonly attempts = new ProviderAttempts();
  private readonly loggedOnce = new Set<string>();
  private readonly offered: ReadonlySet<string>;

  protected constructor(
    adapter: UpstreamAdapterName,
    /** The transport with its resilience, for this provider id. */
    readonly upstream: ResilientUpstream,
    private readonly logger: Logger,
  ) {
    super();
    this.provider = upstream.provider;
    this.offered = new Set(upstreamAdapter(adapter).checks);
  }

  abstract ping(): Promise<void>;

  /**
   * One check's fields, read from the upstream (the subclass's protocol); throws a refundable failure.
   * Called only for a check this adapter offers.
   */
  protected abstract recordOf(check: string, e164: string, lane: Lane, options: CheckOptionValues): Promise<Record<string, FieldValue>>;

  /** What this protocol's error body says (its message and code), for the log line. */
  protected abstract errorWords(body: unknown): ErrorWords;

  /**
   * A refused request that means more in this protocol than its HTTP status (a number it cannot
   * answer, the failure of one number), or undefined for the usual reading: 401/403 unauthorized,
   * anything else `http_<status>`.
   */
  protected refusalOf(_status: number, _words: ErrorWords, _endpoint: string): UpstreamFailure | undefined {
    return undefined;
  }

  offers(check: string): boolean {
    return this.offered.has(check);
  }

  /** One check's full record: its fields, this provider, now (its upstream's Clock). */
  async answer(check: string, e164: string, lane: Lane = 'interactive', options: CheckOptionValues = {}): Promise<CheckAnswer> {
    return this.attempts.time(check, async () => {
      if (!this.offers(check)) throw notOffered(`provider ${this.provider}`, check);
      return answeredNow(check, this.provider, await this.recordOf(check, e164, lane, options), this.upstream.clock.date());
    });
  }

  /**
   * One request of the protocol, its answer checked against `schema` and mapped; any failure (the
   * transport's, the answer's, the mapping's) tallied once under `endpoint` (a name that never holds
   * the number: a path, a package) and thrown again.
   */
  protected async call<A, R>(
    lane: Lane,
    endpoint: string,
    request: UpstreamRequest,
    schema: z.ZodType<A>,
    map: (answer: A) => R,
    /** Another endpoint of the same provider with its own address (an OAuth2 token endpoint); the upstream's own by default. */
    via: ResilientUpstream = this.upstream,
  ): Promise<R> {
    try {
      const answer = await via.exchange(lane, request, (response) => this.parse(endpoint, schema, this.read(endpoint, response)));
      return map(answer);
    } catch (error) {
      if (error instanceof ProviderUnavailableError) this.tally.addFailure(endpoint, error instanceof UpstreamFailure ? error.kind : error.reason);
      throw error;
    }
  }

  /**
   * The JSON of a 2xx answer (`emptyOk`: a 2xx whose status is the whole answer, as a probe's); any
   * other answer as the UpstreamFailure it is (a 429 is held by the transport first).
   */
  protected read(endpoint: string, response: UpstreamResponse, { emptyOk = false }: { emptyOk?: boolean } = {}): unknown {
    const { status } = response;
    let body: unknown;
    try {
      body = JSON.parse(response.body.toString('utf8'));
    } catch {
      body = undefined;
    }
    if (status >= 200 && status < 300) {
      if (body !== undefined || emptyOk) return body;
      this.logBreakOnce(endpoint, '(body)', 'not JSON, or cut short');
      throw new UpstreamFailure(`upstream sent invalid JSON on ${endpoint}`, 'upstream_error', 'invalid_answer');
    }
    const words = this.errorWords(body);
    const special = this.refusalOf(status, words, endpoint);
    if (special) throw special;
    const said = `${words.text ? `: ${words.text}` : ''}${words.code !== undefined ? ` (code ${words.code})` : ''}`;
    if (status === 401 || status === 403) throw new UpstreamFailure(`upstream refused the credentials (HTTP ${status} on ${endpoint}${said})`, 'unauthorized', `http_${status}`);
    throw new UpstreamFailure(`upstream answered HTTP ${status} on ${endpoint}${said}`, 'upstream_error', `http_${status}`);
  }

  /** `body` as the documented schema says, or an invalid_answer failure logged once per field that broke. */
  protected parse<A>(endpoint: string, schema: z.ZodType<A>, body: unknown): A {
    const parsed = schema.safeParse(body);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const field = issue?.path.length ? issue.path.join('.') : '(body)';
    this.logBreakOnce(endpoint, field, issue?.message ?? 'does not match');
    throw new UpstreamFailure(`upstream ${endpoint} answer does not match the documented schema at ${field}`, 'upstream_error', 'invalid_answer');
  }

  /** A word outside the documented vocabulary: refunded, not guessed, logged once per word. */
  protected unknownWord(field: string, word: unknown): UpstreamFailure {
    const shown = JSON.stringify(String(word).slice(0, 40));
    this.logOnce('warn', `${field} ${shown}`, `upstream answered an unknown ${field} ${shown}: refunded, not guessed (logged once per word)`);
    return new UpstreamFailure(`upstream answered an unknown ${field}`, 'upstream_error', 'invalid_answer');
  }

  upstreams(): readonly Upstream[] {
    return [this];
  }

  circuitState(lane: Lane): CircuitBreakerState {
    return this.upstream.circuitState(lane);
  }

  onModuleDestroy(): void {
    this.upstream.close();
  }

  /** One log line per distinct key (a schema break by field, an unknown word), at most 100 of them. */
  protected logOnce(level: 'error' | 'warn', key: string, message: string): void {
    if (this.loggedOnce.has(key) || this.loggedOnce.size >= 100) return;
    this.loggedOnce.add(key);
    this.logger[level](message);
  }

  private logBreakOnce(endpoint: string, field: string, problem: string): void {
    this.logOnce('error', `${endpoint} ${field}`, `upstream ${endpoint} answer does not match the documented schema at ${field}: ${problem} (logged once per field)`);
  }
}

/** An upstream's string for our logs: one short line, no control characters. */
export function logLine(text: string, max = 200): string {
  // eslint-disable-next-line no-control-regex -- an upstream string goes into our logs: keep it one short line
  return text.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, max);
}
