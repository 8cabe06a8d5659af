import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { TestNumberTable } from '../../src/provider/adapters/test-numbers';
import { basicAuthorization, TWILIO_LOOKUP_ERRORS, TwilioLookupErrorCode } from '../../src/provider/adapters/twilio-lookup.protocol';
import { describeNumber } from '../../src/provider/numbering/numbering-plan';
import { sendJson, streamDrip, streamGiant, waiter } from '../upstream-simulator/simulator';
import { FAILING_NUMBER_ERROR_CODE, phoneNumberResource } from './answers';

/**
 * A stand-in for Twilio Lookup v2 (docs/upstream-twilio-lookup.md): `GET /v2/PhoneNumbers/{number}`
 * with HTTP Basic, the Line Status, Line Type Intelligence and SIM Swap packages answered by the shared
 * test-number table (docs/api.md, every one of the five line statuses: answers.ts), Twilio's own
 * error codes, and the same fault knobs as the hlr-lookups simulator.
 */
const ERROR_CODE_FAULTS = (Object.keys(TWILIO_LOOKUP_ERRORS) as unknown as TwilioLookupErrorCode[]).map((code) => `error-${code}` as const);
export const TWILIO_FAULTS = [
  'http-400', 'http-401', 'http-404', 'http-429', 'http-500', 'http-503',
  /** The package asked for answered null: no data for this number. */
  'no-coverage',
  /** The package answered with an error_code (60608, its provider replied with an error). */
  'error-code',
  /** The package answered with that documented error_code (e.g. `error-60601`). */
  ...ERROR_CODE_FAULTS,
  /** Twilio calls the number invalid (`valid: false`, INVALID_BUT_POSSIBLE) and still answers the package. */
  'invalid-verdict',
  /** Twilio calls the number invalid and answers the package null. */
  'invalid-verdict-no-data',
  /** A status / type word that is not in the documented vocabulary. */
  'unknown-word',
  /** `valid` of the wrong type. */
  'wrong-type',
  'partial', 'slow', 'giant', 'drip',
] as const;
export type TwilioFault = (typeof TWILIO_FAULTS)[number];

/**
 * The body Twilio sends with an HTTP error: its error dictionary's code for the status
 * (docs/upstream-twilio-lookup.md): 20003 "Authenticate" for bad credentials, 20404 not found,
 * 20429 too many requests, 20500 / 20503 for its own failures, 400 its generic bad request.
 */
export const TWILIO_HTTP_ERRORS: Readonly<Record<number, { code: number; message: string }>> = {
  400: { code: 400, message: 'Bad Request' },
  401: { code: 20003, message: 'Authenticate' },
  404: { code: 20404, message: 'The requested resource was not found' },
  429: { code: 20429, message: 'Too Many Requests' },
  500: { code: 20500, message: 'Internal Server Error' },
  503: { code: 20503, message: 'Service unavailable' },
};

export interface TwilioSimulatorOptions {
  port: number;
  host: string;
  latencyMs: number;
  errorRate: number;
  outage: boolean;
  key: string;
  secret: string;
  fault: TwilioFault | null;
  faultsByNumber: Readonly<Record<string, TwilioFault>>;
  slowMs: number;
  giantBytes: number;
  rateLimit: { requests: number; windowSeconds: number } | null;
  /** The account may look up Canadian numbers' line type; when false, they answer error 60601, as Twilio does without the CLNPC's authorization. */
  canadaAuthorized: boolean;
  /** SIM Swap answers without the date (only whether the SIM changed within 24 hours), as where the operator may not tell it. */
  simSwapDateWithheld: boolean;
}

export const TWILIO_SIMULATOR_DEFAULTS: Readonly<TwilioSimulatorOptions> = {
  port: 0,
  host: '127.0.0.1',
  latencyMs: 0,
  errorRate: 0,
  outage: false,
  key: 'ACsimulator',
  secret: 'sim-token',
  fault: null,
  faultsByNumber: {},
  slowMs: 10_000,
  giantBytes: 256 * 1024 * 1024,
  rateLimit: null,
  canadaAuthorized: true,
  simSwapDateWithheld: false,
};

export interface TwilioSimulator {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
  setOptions(partial: Partial<Omit<TwilioSimulatorOptions, 'port' | 'host'>>): void;
  stats(): { requests: number; byStatus: Record<string, number>; streamedBytes: number };
  resetStats(): void;
}

export async function startTwilioSimulator(options: Partial<TwilioSimulatorOptions> = {}): Promise<TwilioSimulator> {
  const settings: TwilioSimulatorOptions = { ...TWILIO_SIMULATOR_DEFAULTS, ...options };
  let stats = { requests: 0, byStatus: {} as Record<string, number>, streamedBytes: 0 };
  const testNumbers = new TestNumberTable();
  const timers = new Set<NodeJS.Timeout>();
  let window = { startedMs: 0, count: 0 };

  const wait = waiter(timers);
  const send = (response: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}, cutShort = false) => {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    sendJson(response, status, body, headers, cutShort);
  };
  const fail = (response: http.ServerResponse, status: number, headers: http.OutgoingHttpHeaders = {}, message?: string) => {
    const known = TWILIO_HTTP_ERRORS[status] ?? TWILIO_HTTP_ERRORS[500];
    send(response, status, { code: known.code, message: message ?? known.message, more_info: `https://www.twilio.com/docs/errors/${known.code}`, status }, headers);
  };

  const handle = async (request: http.IncomingMessage, response: http.ServerResponse) => {
    stats.requests += 1;
    if (settings.outage) return fail(response, 503, {}, 'simulated outage');
    const url = new URL(request.url ?? '/', 'http://simulator');
    const match = /^\/v2\/PhoneNumbers\/([^/]+)$/.exec(url.pathname);
    if (request.method !== 'GET' || !match) return fail(response, 404);
    const expected = Buffer.from(basicAuthorization(settings));
    const given = Buffer.from(String(request.headers.authorization ?? ''));
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return fail(response, 401);
    if (settings.rateLimit) {
      const now = Date.now();
      if (now - window.startedMs >= settings.rateLimit.windowSeconds * 1000) window = { startedMs: now, count: 0 };
      window.count += 1;
      if (window.count > settings.rateLimit.requests) return fail(response, 429, { 'Retry-After': '1' });
    }
    if (!(await wait(settings.latencyMs, response))) return;
    if (settings.errorRate > 0 && Math.random() < settings.errorRate) return fail(response, 500, {}, 'simulated random error');

    const e164 = decodeURIComponent(match[1]);
    const fields = url.searchParams.get('Fields');
    const fault = settings.faultsByNumber[e164] ?? settings.fault;
    if (fault === 'http-429') return fail(response, 429, { 'Retry-After': '1' });
    if (fault?.startsWith('http-')) return fail(response, Number(fault.slice('http-'.length)));
    const facts = describeNumber(e164);
    const check = fields === 'line_type_intelligence' ? 'line_type' : fields === 'sim_swap' ? 'sim_swap' : 'network_status';
    const rule = facts.validForPlan ? testNumbers.rule(e164, check) : null;
    if (rule?.kind === 'slow' && !(await wait(rule.delayMs, response))) return;
    if (fault === 'slow' && !(await wait(settings.slowMs, response))) return;

    const unauthorizedCanada = fields === 'line_type_intelligence' && facts.region === 'CA' && !settings.canadaAuthorized;
    const answer = await phoneNumberResource(e164, {
      fields: fields === 'line_status' || fields === 'line_type_intelligence' || fields === 'sim_swap' ? fields : null,
      rule,
      errorCode: fault === 'error-code' ? FAILING_NUMBER_ERROR_CODE : fault?.startsWith('error-') ? Number(fault.slice('error-'.length)) : unauthorizedCanada ? 60601 : null,
      noData: fault === 'no-coverage' || fault === 'invalid-verdict-no-data',
      valid: fault === 'invalid-verdict' || fault === 'invalid-verdict-no-data' ? false : null,
      unknownWord: fault === 'unknown-word',
      simSwapDateWithheld: settings.simSwapDateWithheld,
    });
    if (fault === 'wrong-type') answer.valid = 'yes';
    if (fault === 'giant' || fault === 'drip') {
      stats.byStatus[200] = (stats.byStatus[200] ?? 0) + 1;
      stats.streamedBytes += fault === 'giant' ? await streamGiant(response, answer, settings.giantBytes) : await streamDrip(response, answer, settings.slowMs);
      return;
    }
    return send(response, 200, answer, {}, fault === 'partial');
  };

  const server = http.createServer({ keepAliveTimeout: 30_000 }, (request, response) => {
    request.resume();
    handle(request, response).catch(() => fail(response, 500, {}, 'simulator bug'));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${settings.host}:${port}`,
    port,
    setOptions(partial) {
      Object.assign(settings, partial);
      if ('rateLimit' in partial) window = { startedMs: 0, count: 0 };
    },
    stats: () => structuredClone(stats),
    resetStats() {
      stats = { requests: 0, byStatus: {}, streamedBytes: 0 };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
