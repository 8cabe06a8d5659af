import { Logger } from '@nestjs/common';
import type { z } from 'zod';
import type { FieldValue } from '../../checks/check-definition';
import { Lane, unknownCheck } from '../port/lookup-provider';
import { UpstreamRequest, UpstreamResponse } from '../resilience/http-exchange';
import { ResilientUpstream } from '../resilience/resilient-upstream';
import { UpstreamFailure, ProviderUnavailableError } from '../port/upstream-failure';
import { HttpUpstreamAdapter } from './http-upstream.adapter';
import { networkStatusRecord, numberTypeRecord, portabilityRecord, unknownNumberType } from './hlr-lookups.answers';
import { digestHeaders, HLR_PATHS } from './hlr-lookups.protocol';
import { errorAnswer, firstIssue, hlrLookupAnswer, mnpLookupAnswer, ntLookupAnswer, NtLookupAnswer } from './hlr-lookups.schema';

export interface HlrLookupsCredentials {
  /** API base, e.g. https://www.hlr-lookups.com/api/v2 (no trailing slash). */
  baseUrl: string;
  key: string;
  secret: string;
}

/**
 * Error codes of a 5xx `errors` body that name the failure of the one number looked up, not of the
 * upstream (an assumption, docs/upstream-hlr-lookups.md "How we map it": the simulator answers its
 * failing test number so). Such a failure is refunded like any other but never opens the breaker.
 */
const NUMBER_FAILURE_CODES: ReadonlySet<string> = new Set(['NETWORK_FAILURE']);

/**
 * The HLR Lookups API v2 protocol: every request HMAC-signed, each answer read by its HTTP status,
 * checked against the documented schema and mapped (hlr-lookups.answers.ts). Transport and resilience
 * (pools, deadlines, retries, the breaker, the 429 hold, the size cap) are the ResilientUpstream's
 * this adapter is given; this class only says which answers are the upstream's own failure.
 */
export class HlrLookupsAdapter extends HttpUpstreamAdapter {
  constructor(
    private readonly credentials: HlrLookupsCredentials,
    upstream: ResilientUpstream,
  ) {
    super(upstream, new Logger('HlrLookupsAdapter'));
  }

  protected recordOf(check: string, e164: string, lane: Lane): Promise<Record<string, FieldValue>> {
    switch (check) {
      case 'network_status':
        return this.lookup(lane, HLR_PATHS.hlrLookup, { msisdn: e164 }, hlrLookupAnswer, networkStatusRecord);
      case 'line_type':
        return this.lookup(lane, HLR_PATHS.ntLookup, { number: e164 }, ntLookupAnswer, (answer) => {
          this.noteValidityVerdict(answer);
          const record = numberTypeRecord(answer);
          this.noteUnknownNumberType(answer);
          return record;
        });
      case 'portability':
        return this.lookup(lane, HLR_PATHS.mnpLookup, { msisdn: e164 }, mnpLookupAnswer, portabilityRecord);
      default:
        throw unknownCheck(this.provider, check);
    }
  }

  /** GET /auth-test with the deadline only: reachability and credentials, whatever the breaker says. */
  async ping(): Promise<void> {
    await this.upstream.probe(this.request('GET', HLR_PATHS.authTest), (response) => this.read('GET', HLR_PATHS.authTest, response));
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
      // The schema check runs inside the exchange: malformed 200s count against the breaker.
      const answer = await this.upstream.exchange(lane, this.request('POST', path, payload), (response) => this.parse(path, schema, this.read('POST', path, response)));
      this.tally.addCost(path, answer.cost);
      const result = map(answer);
      // A completed lookup may carry an error_code as context: the answer stands, the code is counted.
      if (answer.error_code !== null && answer.error_code !== undefined) this.tally.addFailure(path, 'error_code');
      return result;
    } catch (error) {
      if (!(error instanceof ProviderUnavailableError)) throw error;
      this.tally.addFailure(path, error instanceof UpstreamFailure ? error.kind : error.reason);
      throw error;
    }
  }

  private request(method: 'GET' | 'POST', path: string, payload?: object): UpstreamRequest {
    const body = payload === undefined ? '' : JSON.stringify(payload);
    const headers: Record<string, string | number> = { Accept: 'application/json', ...digestHeaders(this.credentials, path, method, body) };
    if (method === 'POST') {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = Buffer.byteLength(body);
    }
    return { method, path, headers, body };
  }

  /** The JSON of a 2xx answer; any other answer as the UpstreamFailure it is (429 is held by the transport first). */
  private read(method: 'GET' | 'POST', path: string, response: UpstreamResponse): unknown {
    const { status } = response;
    let body: unknown;
    try {
      body = JSON.parse(response.body.toString('utf8'));
    } catch {
      body = undefined;
    }
    if (status >= 200 && status < 300) {
      // GET /auth-test: the status is the answer (the SDK READMEs check the 200 only).
      if (body !== undefined || method === 'GET') return body;
      this.logBreakOnce(path, '(body)', 'not JSON, or cut short');
      throw new UpstreamFailure(`upstream sent invalid JSON on ${path}`, 'upstream_error', 'invalid_answer');
    }
    const { message, code } = upstreamError(body);
    if (status === 401 || status === 403) {
      throw new UpstreamFailure(`upstream refused the credentials (HTTP ${status} on ${path}${message})`, 'unauthorized', `http_${status}`);
    }
    if (status >= 500 && code !== undefined && NUMBER_FAILURE_CODES.has(code)) {
      throw new UpstreamFailure(`upstream could not look up this number (HTTP ${status} ${code} on ${path})`, 'upstream_error', 'number_failed');
    }
    throw new UpstreamFailure(`upstream answered HTTP ${status} on ${path}${message}`, 'upstream_error', `http_${status}`);
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

  /** NT's `is_valid: false` on a number our plan accepts: logged once (its invalid_reason is free text, not logged). */
  private noteValidityVerdict(answer: NtLookupAnswer): void {
    if (answer.query_status !== 'OK' || answer.is_valid !== false) return;
    this.logOnce('warn', 'nt is_valid false', `upstream ${HLR_PATHS.ntLookup} calls a number valid for its numbering plan invalid: answered from its number_type, or asked elsewhere or refunded when it gives none; never charged as UNKNOWN (logged once)`);
  }

  /** An unknown number_type is answered UNKNOWN (docs/upstream-hlr-lookups.md), but never silently. */
  private noteUnknownNumberType(answer: NtLookupAnswer): void {
    const word = unknownNumberType(answer);
    if (word === null) return;
    this.tally.addFailure(HLR_PATHS.ntLookup, 'unknown_number_type');
    const shown = JSON.stringify(word.slice(0, 40));
    this.logOnce('warn', `number_type ${shown}`, `upstream ${HLR_PATHS.ntLookup} answered an unknown number_type ${shown}: answered UNKNOWN (logged once per word)`);
  }
}

/** The upstream's own words and code from an error body: the words for the log line (never shown to customers). */
function upstreamError(body: unknown): { message: string; code?: string } {
  const parsed = errorAnswer.safeParse(body);
  if (!parsed.success) return { message: '' };
  const first = parsed.data.errors[0];
  const code = typeof first === 'string' ? undefined : first.code;
  const text = typeof first === 'string' ? first : (first.message ?? first.code ?? '');
  // eslint-disable-next-line no-control-regex -- an upstream string goes into our logs: keep it one short line
  return { message: text ? `: ${text.replace(/[\u0000-\u001f\u007f]/g, ' ').slice(0, 200)}` : '', code };
}
