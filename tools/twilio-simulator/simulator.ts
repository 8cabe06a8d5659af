import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { TestNumberTable } from '../../src/provider/adapters/test-numbers';
import { basicAuthorization, twilioLineType } from '../../src/provider/adapters/twilio-lookup.protocol';
import { describeNumber } from '../../src/provider/numbering/numbering-plan';
import { sendJson, streamDrip, streamGiant, waiter } from '../upstream-simulator/simulator';

/**
 * A stand-in for Twilio Lookup v2 (docs/upstream-twilio-lookup.md): `GET /v2/PhoneNumbers/{number}`
 * with HTTP Basic, the Line Status and Line Type Intelligence packages answered by the shared
 * test-number table (docs/api.md), and the same fault knobs as the hlr-lookups simulator.
 */
export const TWILIO_FAULTS = [
  'http-400', 'http-401', 'http-404', 'http-429', 'http-500', 'http-503',
  /** The package asked for answered null: no data for this number. */
  'no-coverage',
  /** The package answered with an error_code. */
  'error-code',
  /** A status / type word that is not in the documented vocabulary. */
  'unknown-word',
  /** `valid` of the wrong type. */
  'wrong-type',
  'partial', 'slow', 'giant', 'drip',
] as const;
export type TwilioFault = (typeof TWILIO_FAULTS)[number];

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
};

export interface TwilioSimulator {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
  setOptions(partial: Partial<Omit<TwilioSimulatorOptions, 'port' | 'host'>>): void;
  stats(): { requests: number; byStatus: Record<string, number>; streamedBytes: number };
  resetStats(): void;
}

const STATUS_WORDS = { CONNECTED: 'active', ABSENT: 'unreachable', UNDETERMINED: 'unknown' } as const;

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
  const fail = (response: http.ServerResponse, status: number, code: number, message: string, headers: http.OutgoingHttpHeaders = {}) =>
    send(response, status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status }, headers);

  const handle = async (request: http.IncomingMessage, response: http.ServerResponse) => {
    stats.requests += 1;
    if (settings.outage) return fail(response, 503, 20503, 'simulated outage');
    const url = new URL(request.url ?? '/', 'http://simulator');
    const match = /^\/v2\/PhoneNumbers\/([^/]+)$/.exec(url.pathname);
    if (request.method !== 'GET' || !match) return fail(response, 404, 20404, 'The requested resource was not found');
    const expected = Buffer.from(basicAuthorization(settings));
    const given = Buffer.from(String(request.headers.authorization ?? ''));
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return fail(response, 401, 20003, 'Authenticate');
    if (settings.rateLimit) {
      const now = Date.now();
      if (now - window.startedMs >= settings.rateLimit.windowSeconds * 1000) window = { startedMs: now, count: 0 };
      window.count += 1;
      if (window.count > settings.rateLimit.requests) return fail(response, 429, 20429, 'Too Many Requests', { 'Retry-After': '1' });
    }
    if (!(await wait(settings.latencyMs, response))) return;
    if (settings.errorRate > 0 && Math.random() < settings.errorRate) return fail(response, 500, 20500, 'simulated random error');

    const e164 = decodeURIComponent(match[1]);
    const fields = url.searchParams.get('Fields');
    const fault = settings.faultsByNumber[e164] ?? settings.fault;
    if (fault === 'http-429') return fail(response, 429, 20429, 'Too Many Requests', { 'Retry-After': '1' });
    if (fault?.startsWith('http-')) {
      const status = Number(fault.slice('http-'.length));
      return fail(response, status, 20000 + status, `simulated HTTP ${status}`);
    }
    const facts = describeNumber(e164);
    const check = fields === 'line_type_intelligence' ? 'line_type' : 'network_status';
    const rule = facts.validForPlan ? testNumbers.rule(e164, check) : null;
    if (rule?.kind === 'slow' && !(await wait(rule.delayMs, response))) return;
    if (fault === 'slow' && !(await wait(settings.slowMs, response))) return;

    const answer: Record<string, unknown> = {
      calling_country_code: null,
      country_code: facts.region,
      phone_number: e164,
      national_format: null,
      valid: facts.validForPlan,
      validation_errors: facts.validForPlan ? [] : ['INVALID_BUT_POSSIBLE'],
      line_status: null,
      line_type_intelligence: null,
      url: `https://lookups.twilio.com/v2/PhoneNumbers/${e164}`,
    };
    if (facts.validForPlan && fields === 'line_status' && fault !== 'no-coverage') {
      // The failing test number (0003): the package answers an error code, a failure of this number only.
      const failed = rule?.kind === 'failure' || fault === 'error-code';
      const status = fault === 'unknown-word' ? 'dormant' : rule && rule.kind !== 'failure' ? STATUS_WORDS[rule.status] : 'unknown';
      answer.line_status = failed ? { status: null, error_code: 60600 } : { status, error_code: null };
    }
    if (facts.validForPlan && fields === 'line_type_intelligence' && fault !== 'no-coverage') {
      const failed = rule?.kind === 'failure' || fault === 'error-code';
      answer.line_type_intelligence = failed
        ? { type: null, carrier_name: null, mobile_country_code: null, mobile_network_code: null, error_code: 60600 }
        : { type: fault === 'unknown-word' ? 'satellitePhone' : twilioLineType(facts.lineType), carrier_name: null, mobile_country_code: null, mobile_network_code: null, error_code: null };
    }
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
    handle(request, response).catch(() => fail(response, 500, 20500, 'simulator bug'));
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
