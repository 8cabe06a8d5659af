import { Logger } from '@nestjs/common';
import type { CheckOptionValues, FieldValue } from '../../checks/check-definition';
import type { ChecksOf } from '../../config/upstream-adapters';
import type { Lane } from '../port/lookup-provider';
import type { UpstreamRequest } from '../resilience/http-exchange';
import { ResilientUpstream } from '../resilience/resilient-upstream';
import { UpstreamFailure } from '../port/upstream-failure';
import { ErrorWords, HttpUpstreamAdapter, logLine } from './http-upstream.adapter';
import { durationHours, simSwapFields, windowHoursOf } from './sim-swap-fields';
import {
  basicAuthorization,
  LINE_STATUSES,
  lookupErrorKind,
  lookupPath,
  PackageName,
  PhoneNumberAnswer,
  phoneNumberAnswer,
  TWILIO_LINE_TYPES,
  TWILIO_VALIDATION_ERRORS,
  twilioError,
} from './twilio-lookup.protocol';

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
 * Intelligence answers line_type, SIM Swap answers sim_swap (the checks its descriptor lists; the
 * router never asks it for portability). Every answer is checked against the schema (the base class); a package the upstream
 * has no data for, an error_code in it, or a word we do not know is a failure, never a guess.
 * Transport and resilience are the ResilientUpstream's it is given.
 */
export class TwilioLookupAdapter extends HttpUpstreamAdapter {
  /** One data package per check it offers (the descriptor's list: the compiler holds the two together). */
  private readonly packages: Record<ChecksOf<'twilio-lookup'>, (e164: string, lane: Lane, options: CheckOptionValues) => Promise<Record<string, FieldValue>>> = {
    network_status: (e164, lane) =>
      this.lookup(lane, e164, 'line_status', (answer) => {
        const info = this.packageOf(answer, 'line_status', (found) => typeof found.status === 'string');
        const status = wordIn(LINE_STATUSES, info.status?.toLowerCase());
        if (status === undefined) throw this.unknownWord('line_status.status', info.status);
        return { status, carrier: null, status_reason: info.status ?? null, mcc: null, mnc: null };
      }),
    line_type: (e164, lane) =>
      this.lookup(lane, e164, 'line_type_intelligence', (answer) => {
        const info = this.packageOf(answer, 'line_type_intelligence', (found) => typeof found.type === 'string');
        const lineType = wordIn(TWILIO_LINE_TYPES, info.type ?? undefined);
        if (lineType === undefined) throw this.unknownWord('line_type_intelligence.type', info.type);
        return { line_type: lineType };
      }),
    sim_swap: (e164, lane, options) =>
      this.lookup(lane, e164, 'sim_swap', (answer) => {
        const info = this.packageOf(answer, 'sim_swap', (found) => !!found.last_sim_swap);
        const swap = info.last_sim_swap ?? {};
        const date = swap.last_sim_swap_date ?? null;
        const lastChangeAt = date === null ? null : new Date(date);
        if (lastChangeAt !== null && Number.isNaN(lastChangeAt.getTime())) throw this.unknownWord('sim_swap.last_sim_swap.last_sim_swap_date', date);
        const periodHours = swap.swapped_period ? durationHours(swap.swapped_period) : undefined;
        if (swap.swapped_period && periodHours === undefined) throw this.unknownWord('sim_swap.last_sim_swap.swapped_period', swap.swapped_period);
        const period = periodHours !== undefined && typeof swap.swapped_in_period === 'boolean' ? { hours: periodHours, swapped: swap.swapped_in_period } : undefined;
        return simSwapFields({ lastChangeAt, period }, this.upstream.clock.date(), windowHoursOf(options));
      }),
  };

  constructor(
    private readonly credentials: TwilioLookupCredentials,
    upstream: ResilientUpstream,
  ) {
    super('twilio-lookup', upstream, new Logger('TwilioLookupAdapter'));
  }

  protected recordOf(check: string, e164: string, lane: Lane, options: CheckOptionValues): Promise<Record<string, FieldValue>> {
    return this.packages[check as ChecksOf<'twilio-lookup'>](e164, lane, options);
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
    await this.upstream.probe(this.request(lookupPath(PING_NUMBER)), (response) => this.read('ping', response));
  }

  /** One package of one number (the package's name is the tally's endpoint: the path holds the number). */
  private lookup<R>(lane: Lane, e164: string, fields: PackageName, map: (answer: PhoneNumberAnswer) => R): Promise<R> {
    return this.call(lane, fields, this.request(lookupPath(e164, fields)), phoneNumberAnswer, map);
  }

  private request(path: string): UpstreamRequest {
    return { method: 'GET', path, headers: { Accept: 'application/json', Authorization: basicAuthorization(this.credentials) } };
  }

  /** Twilio's error body: `{ code, message, more_info, status }`. */
  protected errorWords(body: unknown): ErrorWords {
    const error = twilioError.safeParse(body);
    if (!error.success) return { text: '' };
    return { text: logLine(error.data.message ?? ''), code: error.data.code === undefined ? undefined : String(error.data.code) };
  }
}

function wordIn<T extends Record<string, string>>(table: T, word: string | undefined): T[keyof T] | undefined {
  return word !== undefined && Object.hasOwn(table, word) ? table[word as keyof T] : undefined;
}
