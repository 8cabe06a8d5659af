import { Logger } from '@nestjs/common';
import type { ZodType } from 'zod';
import type { FieldValue } from '../../checks/check-definition';
import type { ChecksOf } from '../../config/upstream-adapters';
import type { Lane } from '../port/lookup-provider';
import type { UpstreamRequest } from '../resilience/http-exchange';
import { ResilientUpstream } from '../resilience/resilient-upstream';
import { UpstreamFailure } from '../port/upstream-failure';
import { ErrorWords, HttpUpstreamAdapter, logLine } from './http-upstream.adapter';
import { networkStatusRecord, numberTypeRecord, portabilityRecord, unknownNumberType } from './hlr-lookups.answers';
import { digestHeaders, HLR_PATHS } from './hlr-lookups.protocol';
import { errorAnswer, hlrLookupAnswer, mnpLookupAnswer, ntLookupAnswer, NtLookupAnswer } from './hlr-lookups.schema';

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
 * this adapter is given, the reading and tallying the base class's; this class says which endpoint
 * answers each check and which answers are the upstream's own failure.
 */
export class HlrLookupsAdapter extends HttpUpstreamAdapter {
  /** One endpoint per check it offers (the descriptor's list: the compiler holds the two together). */
  private readonly endpoints: Record<ChecksOf<'hlr-lookups'>, (e164: string, lane: Lane) => Promise<Record<string, FieldValue>>> = {
    network_status: (e164, lane) => this.lookup(lane, HLR_PATHS.hlrLookup, { msisdn: e164 }, hlrLookupAnswer, networkStatusRecord),
    line_type: (e164, lane) =>
      this.lookup(lane, HLR_PATHS.ntLookup, { number: e164 }, ntLookupAnswer, (answer) => {
        this.noteValidityVerdict(answer);
        const record = numberTypeRecord(answer);
        this.noteUnknownNumberType(answer);
        return record;
      }),
    portability: (e164, lane) => this.lookup(lane, HLR_PATHS.mnpLookup, { msisdn: e164 }, mnpLookupAnswer, portabilityRecord),
  };

  constructor(
    private readonly credentials: HlrLookupsCredentials,
    upstream: ResilientUpstream,
  ) {
    super('hlr-lookups', upstream, new Logger('HlrLookupsAdapter'));
  }

  protected recordOf(check: string, e164: string, lane: Lane): Promise<Record<string, FieldValue>> {
    return this.endpoints[check as ChecksOf<'hlr-lookups'>](e164, lane);
  }

  /** GET /auth-test with the deadline only: reachability and credentials, whatever the breaker says. */
  async ping(): Promise<void> {
    // GET /auth-test: the status is the answer (the SDK READMEs check the 200 only).
    await this.upstream.probe(this.request('GET', HLR_PATHS.authTest), (response) => this.read(HLR_PATHS.authTest, response, { emptyOk: true }));
  }

  /** One lookup: the base class's call, then the upstream's cost and any error_code of a completed answer counted. */
  private lookup<A extends { cost: string; error_code?: number | null }, R>(lane: Lane, path: string, payload: object, schema: ZodType<A>, map: (answer: A) => R): Promise<R> {
    return this.call(lane, path, this.request('POST', path, payload), schema, (answer) => {
      this.tally.addCost(path, answer.cost);
      const result = map(answer);
      // A completed lookup may carry an error_code as context: the answer stands, the code is counted.
      if (answer.error_code !== null && answer.error_code !== undefined) this.tally.addFailure(path, 'error_code');
      return result;
    });
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

  /** The upstream's own words and code from an `errors` body. */
  protected errorWords(body: unknown): ErrorWords {
    const parsed = errorAnswer.safeParse(body);
    if (!parsed.success) return { text: '' };
    const first = parsed.data.errors[0];
    const code = typeof first === 'string' ? undefined : first.code;
    const text = typeof first === 'string' ? first : (first.message ?? first.code ?? '');
    return { text: logLine(text), code };
  }

  /** A 5xx naming the failure of this one number (NUMBER_FAILURE_CODES): refunded, never against the breaker. */
  protected override refusalOf(status: number, words: ErrorWords, path: string): UpstreamFailure | undefined {
    if (status >= 500 && words.code !== undefined && NUMBER_FAILURE_CODES.has(words.code)) {
      return new UpstreamFailure(`upstream could not look up this number (HTTP ${status} ${words.code} on ${path})`, 'upstream_error', 'number_failed');
    }
    return undefined;
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
