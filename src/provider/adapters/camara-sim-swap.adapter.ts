import { Logger } from '@nestjs/common';
import type { CheckOptionValues, FieldValue } from '../../checks/check-definition';
import type { Lane } from '../port/lookup-provider';
import { UpstreamFailure } from '../port/upstream-failure';
import type { UpstreamRequest } from '../resilience/http-exchange';
import { ResilientUpstream } from '../resilience/resilient-upstream';
import {
  CAMARA_MAX_AGE_HOURS,
  CAMARA_PATHS,
  camaraError,
  camaraNumberError,
  checkSimSwapInfo,
  clientAuthorization,
  simSwapInfo,
  TOKEN_DEFAULT_LIFETIME_SECONDS,
  TOKEN_EXPIRY_MARGIN_SECONDS,
  tokenAnswer,
  tokenRequestBody,
  type CamaraRequestBody,
} from './camara-sim-swap.protocol';
import { ErrorWords, HttpUpstreamAdapter, logLine } from './http-upstream.adapter';
import { simSwapFields, windowHoursOf } from './sim-swap-fields';
import type { z } from 'zod';

export interface CamaraClient {
  /** The OAuth2 client id and secret (client credentials, a two-legged token). */
  key: string;
  secret: string;
}

/** An access token held for the requests, never logged. */
interface HeldToken {
  value: string;
  /** The Clock's epoch ms from which it is renewed (its announced expiry less a margin). */
  renewAt: number;
}

/**
 * An operator's CAMARA SimSwap API (docs/upstream-camara-sim-swap.md), answering sim_swap only.
 * `retrieve-date` first: the date of the last SIM change gives both fields for any window; when the
 * operator keeps the date back (null) and its `monitoredPeriod` does not cover the account's window,
 * `check` with `maxAge` = the window says whether the SIM changed within it (one more request).
 * Requests carry a bearer token from the operator's OAuth2 token endpoint (client credentials), held
 * until shortly before it expires and fetched once however many lookups wait for it; a 401 (the
 * operator revoked or expired it early) fetches a new one and asks once more.
 */
export class CamaraSimSwapAdapter extends HttpUpstreamAdapter {
  private token: HeldToken | undefined;
  private fetching: Promise<HeldToken> | undefined;
  /** Tokens fetched, for tests and the log (never a token). */
  tokensFetched = 0;

  constructor(
    private readonly client: CamaraClient,
    upstream: ResilientUpstream,
    /** The token endpoint, with the resilience every upstream gets (its own address). */
    private readonly tokenEndpoint: ResilientUpstream,
  ) {
    super('camara-sim-swap', upstream, new Logger('CamaraSimSwapAdapter'));
  }

  protected async recordOf(_check: string, e164: string, lane: Lane, options: CheckOptionValues): Promise<Record<string, FieldValue>> {
    const windowHours = windowHoursOf(options);
    const info = await this.authorized(lane, CAMARA_PATHS.retrieveDate, { phoneNumber: e164 }, simSwapInfo);
    const now = this.upstream.clock.date();
    if (info.latestSimChange !== null) return simSwapFields({ lastChangeAt: new Date(info.latestSimChange) }, now, windowHours);
    const monitoredHours = info.monitoredPeriod === undefined ? undefined : info.monitoredPeriod * 24;
    if (monitoredHours !== undefined && monitoredHours >= windowHours) {
      return simSwapFields({ lastChangeAt: null, period: { hours: monitoredHours, swapped: false } }, now, windowHours);
    }
    const maxAge = Math.min(Math.ceil(windowHours), CAMARA_MAX_AGE_HOURS);
    const checked = await this.authorized(lane, CAMARA_PATHS.check, { phoneNumber: e164, maxAge }, checkSimSwapInfo);
    return simSwapFields({ lastChangeAt: null, period: { hours: maxAge, swapped: checked.swapped } }, this.upstream.clock.date(), windowHours);
  }

  /** Reachability and credentials: a token from the token endpoint (no number is sent anywhere). */
  async ping(): Promise<void> {
    await this.tokenEndpoint.probe(this.tokenRequest(), (response) => this.parse('token', tokenAnswer, this.read('token', response)));
  }

  override onModuleDestroy(): void {
    super.onModuleDestroy();
    this.tokenEndpoint.close();
  }

  /** One operation with the held token; a 401 fetches a new token and asks once more. */
  private async authorized<A>(lane: Lane, path: string, body: CamaraRequestBody, schema: z.ZodType<A>): Promise<A> {
    const token = await this.accessToken(lane);
    try {
      return await this.call(lane, path, this.request(path, body, token.value), schema, (answer) => answer);
    } catch (error) {
      if (!(error instanceof UpstreamFailure && error.kind === 'http_401')) throw error;
      this.forget(token);
      const renewed = await this.accessToken(lane);
      return this.call(lane, path, this.request(path, body, renewed.value), schema, (answer) => answer);
    }
  }

  /** The held token while it is fresh, else one fetch shared by every lookup waiting for it. */
  private accessToken(lane: Lane): Promise<HeldToken> {
    if (this.token !== undefined && this.upstream.clock.now() < this.token.renewAt) return Promise.resolve(this.token);
    this.fetching ??= this.fetchToken(lane).finally(() => {
      this.fetching = undefined;
    });
    return this.fetching;
  }

  private async fetchToken(lane: Lane): Promise<HeldToken> {
    const answer = await this.call(lane, 'token', this.tokenRequest(), tokenAnswer, (found) => found, this.tokenEndpoint);
    this.tokensFetched += 1;
    const lifetime = answer.expires_in ?? TOKEN_DEFAULT_LIFETIME_SECONDS;
    const usable = Math.max(lifetime - TOKEN_EXPIRY_MARGIN_SECONDS, lifetime / 2);
    this.token = { value: answer.access_token, renewAt: this.upstream.clock.now() + usable * 1000 };
    return this.token;
  }

  /** Drops a token the upstream refused (unless another lookup has already replaced it). */
  private forget(token: HeldToken): void {
    if (this.token === token) this.token = undefined;
  }

  private tokenRequest(): UpstreamRequest {
    const body = tokenRequestBody();
    return {
      method: 'POST',
      path: '',
      headers: {
        Accept: 'application/json',
        Authorization: clientAuthorization(this.client),
        'Content-Type': 'application/x-www-form-urlencoded',
        'Content-Length': Buffer.byteLength(body),
      },
      body,
    };
  }

  private request(path: string, payload: CamaraRequestBody, token: string): UpstreamRequest {
    const body = JSON.stringify(payload);
    return {
      method: 'POST',
      path,
      headers: { Accept: 'application/json', Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) },
      body,
    };
  }

  /** CAMARA's ErrorInfo `{ status, code, message }`, or an OAuth2 error `{ error, error_description }` from the token endpoint. */
  protected errorWords(body: unknown): ErrorWords {
    const parsed = camaraError.safeParse(body);
    if (parsed.success && (parsed.data.code !== undefined || parsed.data.message !== undefined)) {
      return { text: logLine(parsed.data.message ?? ''), code: parsed.data.code };
    }
    const oauth = body as { error?: unknown; error_description?: unknown } | undefined;
    if (oauth && typeof oauth.error === 'string') return { text: logLine(typeof oauth.error_description === 'string' ? oauth.error_description : ''), code: logLine(oauth.error, 40) };
    return { text: '' };
  }

  /** A number this operator does not serve, or to which the service does not apply: asked elsewhere or refunded; our own request's fault: logged. */
  protected override refusalOf(status: number, words: ErrorWords, endpoint: string): UpstreamFailure | undefined {
    const kind = camaraNumberError(words.code);
    if (kind === undefined || (status !== 404 && status !== 422)) return undefined;
    if (kind === 'no_coverage') return new UpstreamFailure(`upstream does not answer for this number (HTTP ${status} ${words.code} on ${endpoint})`, 'upstream_error', 'no_coverage');
    this.logOnce('error', `${endpoint} ${words.code}`, `upstream ${endpoint} refused our request: ${words.code} (the token names a subject: configure a two-legged, client-credentials client; logged once)`);
    return new UpstreamFailure(`upstream refused the request (HTTP ${status} ${words.code} on ${endpoint})`, 'upstream_error', kind);
  }
}
