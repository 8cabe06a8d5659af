import { Logger } from '@nestjs/common';
import type { FieldValue } from '../../checks/check-definition';
import { Lane, unknownCheck } from '../port/lookup-provider';
import { UpstreamRequest, UpstreamResponse } from '../resilience/http-exchange';
import { ResilientUpstream } from '../resilience/resilient-upstream';
import { UpstreamFailure, ProviderUnavailableError } from '../port/upstream-failure';
import { HttpUpstreamAdapter } from './http-upstream.adapter';
import {
  basicAuthorization,
  LINE_STATUSES,
  lookupErrorKind,
  lookupPath,
  PhoneNumberAnswer,
  phoneNumberAnswer,
  TWILIO_LINE_TYPES,
  TWILIO_VALIDATION_ERRORS,
  twilioError,
} from './twilio-lookup.protocol';

type PackageName = 'line_status' | 'line_type_intelligence';

export interface TwilioLookupCredentials {
  /** API base, https://lookups.twilio.com (no trailing slash). */
  baseUrl: string;
  /** Account SID or API key SID. */
  key: string;
  /** Auth token or API key secret. */
  secret: string;
}

/** A number that Twilio's own examples use: the free basic lookup of it tells reachability and credentials. */
const PING_NUMBER = '+14159929960';

/**
 * Twilio Lookup v2 (docs/upstream-twilio-lookup.md): Line Status answers network_status, Line Type
 * Intelligence answers line_type; portability is not offered (a refundable failure, so a router can
 * send it elsewhere). Every answer is checked against the schema; a package the upstream has no data
 * for, an error_code in it, or a word we do not know is a failure, never a guess. Transport and
 * resilience are the ResilientUpstream's it is given.
 */
export class TwilioLookupAdapter extends HttpUpstreamAdapter {
  constructor(
    private readonly credentials: TwilioLookupCredentials,
    upstream: ResilientUpstream,
  ) {
    super(upstream, new Logger('TwilioLookupAdapter'));
  }

  protected async recordOf(check: string, e164: string, lane: Lane): Promise<Record<string, FieldValue>> {
    switch (check) {
      case 'network_status':
        return this.lookup(lane, e164, 'line_status', (answer) => {
          const info = this.packageOf(answer, 'line_status', (found) => typeof found.status === 'string');
          const status = wordIn(LINE_STATUSES, info.status?.toLowerCase());
          if (status === undefined) throw this.unknownWord('line_status.status', info.status);
          return { status, carrier: null, status_reason: info.status ?? null, mcc: null, mnc: null };
        });
      case 'line_type':
        return this.lookup(lane, e164, 'line_type_intelligence', (answer) => {
          const info = this.packageOf(answer, 'line_type_intelligence', (found) => typeof found.type === 'string');
          const lineType = wordIn(TWILIO_LINE_TYPES, info.type ?? undefined);
          if (lineType === undefined) throw this.unknownWord('line_type_intelligence.type', info.type);
          return { line_type: lineType };
        });
      case 'portability':
        // Not offered: a refundable failure, so a router sends the check to the next provider.
        this.tally.addFailure('portability', 'not_offered');
        throw new UpstreamFailure('Twilio Lookup v2 offers no portability check', 'upstream_error', 'not_offered');
      default:
        throw unknownCheck(this.provider, check);
    }
  }

  /**
   * The package asked for, when it holds an answer. Twilio's `valid` is its own verdict: we ask only
   * about numbers our numbering plan calls valid, so `valid: false` never makes the answer ABSENT
   * (nobody looked a status up for that): the package is read when it holds one (`looked`), else the
   * lookup is refunded as `no_coverage` and the router asks the next provider. An error_code in the
   * package is a refundable failure of the kind TWILIO_LOOKUP_ERRORS gives it.
   */
  private packageOf<P extends PackageName>(answer: PhoneNumberAnswer, name: P, looked: (found: NonNullable<PhoneNumberAnswer[P]>) => boolean): NonNullable<PhoneNumberAnswer[P]> {
    const info = answer[name] as NonNullable<PhoneNumberAnswer[P]> | null | undefined;
    const code = info?.error_code;
    if (code !== null && code !== undefined) {
      const kind = lookupErrorKind(code);
      this.logOnce('warn', `${name} error_code ${code}`, `upstream ${name} answered error_code ${code}: ${kind === 'no_coverage' ? 'it cannot answer such numbers, asked elsewhere or refunded' : 'refunded'} (logged once per code)`);
      throw new UpstreamFailure(`upstream ${name} lookup failed (error_code ${code})`, 'upstream_error', kind);
    }
    if (!answer.valid) this.noteValidityVerdict(answer, name, !!info && looked(info));
    if (!info || (!answer.valid && !looked(info))) {
      const why = answer.valid ? 'has no data for this number' : 'calls this number invalid and looked nothing up';
      throw new UpstreamFailure(`upstream ${name} ${why}`, 'upstream_error', 'no_coverage');
    }
    return info;
  }

  /** Twilio's `valid: false` on a number our plan accepts: logged once per set of reasons (the reasons only, never the number). */
  private noteValidityVerdict(answer: PhoneNumberAnswer, name: PackageName, answered: boolean): void {
    const reasons = (answer.validation_errors ?? []).map((reason) => ((TWILIO_VALIDATION_ERRORS as readonly string[]).includes(reason) ? reason : 'other'));
    const shown = [...new Set(reasons)].sort().join(',') || 'none';
    const outcome = answered ? 'answered from the package' : 'nothing looked up: asked elsewhere or refunded';
    this.logOnce('warn', `validity ${name} ${shown} ${answered}`, `upstream calls a number valid for its numbering plan invalid (validation_errors: ${shown}) on ${name}: ${outcome}, never charged as ABSENT (logged once per reasons)`);
  }

  /** The free basic lookup of a documented example number: reachability and credentials. */
  async ping(): Promise<void> {
    await this.upstream.probe(this.request(lookupPath(PING_NUMBER)), (response) => this.read(response, 'ping'));
  }

  private async lookup<R>(lane: Lane, e164: string, fields: PackageName, map: (answer: PhoneNumberAnswer) => R): Promise<R> {
    try {
      // The schema check runs inside the exchange: malformed 200s count against the breaker.
      const answer = await this.upstream.exchange(lane, this.request(lookupPath(e164, fields)), (response) => this.parse(this.read(response, fields), fields));
      return map(answer);
    } catch (error) {
      if (error instanceof ProviderUnavailableError) this.tally.addFailure(fields, error instanceof UpstreamFailure ? error.kind : error.reason);
      throw error;
    }
  }

  private parse(body: unknown, fields: string): PhoneNumberAnswer {
    const parsed = phoneNumberAnswer.safeParse(body);
    if (parsed.success) return parsed.data;
    const field = parsed.error.issues[0]?.path.join('.') || '(root)';
    this.logOnce('warn', `schema ${field}`, `upstream ${fields} answer does not match the documented schema at ${field} (logged once per field)`);
    throw new UpstreamFailure(`upstream ${fields} answer does not match the documented schema at ${field}`, 'upstream_error', 'invalid_answer');
  }

  private request(path: string): UpstreamRequest {
    return { method: 'GET', path, headers: { Accept: 'application/json', Authorization: basicAuthorization(this.credentials) } };
  }

  private read(response: UpstreamResponse, what: string): unknown {
    let body: unknown;
    try {
      body = JSON.parse(response.body.toString('utf8'));
    } catch {
      body = undefined;
    }
    const { status } = response;
    if (status >= 200 && status < 300) {
      if (body !== undefined) return body;
      throw new UpstreamFailure(`upstream sent invalid JSON on ${what}`, 'upstream_error', 'invalid_answer');
    }
    const error = twilioError.safeParse(body);
    const code = error.success && error.data.code !== undefined ? ` (code ${error.data.code})` : '';
    if (status === 401 || status === 403) throw new UpstreamFailure(`upstream refused the credentials (HTTP ${status}${code})`, 'unauthorized', `http_${status}`);
    throw new UpstreamFailure(`upstream answered HTTP ${status} on ${what}${code}`, 'upstream_error', `http_${status}`);
  }

  private unknownWord(field: string, word: string | null | undefined): UpstreamFailure {
    const shown = JSON.stringify(String(word).slice(0, 40));
    this.logOnce('warn', `${field} ${shown}`, `upstream answered an unknown ${field} ${shown}: refunded, not guessed (logged once per word)`);
    return new UpstreamFailure(`upstream answered an unknown ${field}`, 'upstream_error', 'invalid_answer');
  }
}

function wordIn<T extends Record<string, string>>(table: T, word: string | undefined): T[keyof T] | undefined {
  return word !== undefined && Object.hasOwn(table, word) ? table[word as keyof T] : undefined;
}
