import { randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { CAMARA_MAX_AGE_HOURS, CAMARA_PATHS, clientAuthorization } from '../../src/provider/adapters/camara-sim-swap.protocol';
import { simSwapHoursAgo, TestNumberTable } from '../../src/provider/adapters/test-numbers';
import { describeNumber } from '../../src/provider/numbering/numbering-plan';
import { sendJson, streamDrip, streamGiant, waiter } from '../upstream-simulator/simulator';

/**
 * A stand-in for an operator's CAMARA SimSwap API v2 (docs/upstream-camara-sim-swap.md): an OAuth2
 * token endpoint (client credentials, HTTP Basic) at `/oauth2/token`, and `POST /sim-swap/v2/retrieve-date`
 * and `/check` with a bearer token, answering by the shared SIM-change table (test-numbers.ts: 0007
 * changed 2 hours ago, 0008 100 hours ago, others 4,000 hours ago) and the failing and slow test numbers,
 * with CAMARA's error bodies and the same fault knobs as the other simulators.
 */
export const CAMARA_FAULTS = [
  'http-400', 'http-401', 'http-403', 'http-429', 'http-500', 'http-503',
  /** 404 IDENTIFIER_NOT_FOUND: this operator does not know the number. */
  'http-404',
  /** 422 SERVICE_NOT_APPLICABLE: the service does not apply to the number. */
  'http-422',
  /** retrieve-date tells a change only within monitoredPeriodDays; an older one is null with the monitoredPeriod (local rules). */
  'date-withheld',
  /** retrieve-date answers null and no monitoredPeriod, whatever the date: only `check` tells. */
  'date-withheld-unmonitored',
  /** `latestSimChange` without a time zone (the API requires one). */
  'no-time-zone',
  /** `latestSimChange` a number, `swapped` a string: fields of the wrong type. */
  'wrong-type',
  'partial', 'slow', 'giant', 'drip',
] as const;
export type CamaraFault = (typeof CAMARA_FAULTS)[number];

export const CAMARA_API_PREFIX = '/sim-swap/v2';
export const CAMARA_TOKEN_PATH = '/oauth2/token';

/** CAMARA's ErrorInfo for each HTTP fault (code and message as the API documents them). */
const CAMARA_HTTP_ERRORS: Readonly<Record<number, { code: string; message: string }>> = {
  400: { code: 'INVALID_ARGUMENT', message: 'Client specified an invalid argument, request body or query param.' },
  401: { code: 'UNAUTHENTICATED', message: 'Request not authenticated due to missing, invalid, or expired credentials.' },
  403: { code: 'PERMISSION_DENIED', message: 'Client does not have sufficient permissions to perform this action.' },
  404: { code: 'IDENTIFIER_NOT_FOUND', message: 'Device identifier not found.' },
  422: { code: 'SERVICE_NOT_APPLICABLE', message: 'The service is not available for the provided identifier.' },
  429: { code: 'TOO_MANY_REQUESTS', message: 'Rate limit reached.' },
  500: { code: 'INTERNAL', message: 'Server error.' },
  503: { code: 'UNAVAILABLE', message: 'Service unavailable.' },
};

export interface CamaraSimulatorOptions {
  port: number;
  host: string;
  latencyMs: number;
  errorRate: number;
  /** Every API request answered 503 (the token endpoint still answers). */
  outage: boolean;
  clientId: string;
  clientSecret: string;
  /** `expires_in` of the tokens it issues; a token is refused (401) after it. */
  tokenLifetimeSeconds: number;
  /** The token endpoint answers 503. */
  tokenOutage: boolean;
  /** The monitoredPeriod (days) of a withheld date. */
  monitoredPeriodDays: number;
  fault: CamaraFault | null;
  faultsByNumber: Readonly<Record<string, CamaraFault>>;
  slowMs: number;
  giantBytes: number;
  rateLimit: { requests: number; windowSeconds: number } | null;
}

export const CAMARA_SIMULATOR_DEFAULTS: Readonly<CamaraSimulatorOptions> = {
  port: 0,
  host: '127.0.0.1',
  latencyMs: 0,
  errorRate: 0,
  outage: false,
  clientId: 'sim-client',
  clientSecret: 'sim-client-secret',
  tokenLifetimeSeconds: 3600,
  tokenOutage: false,
  monitoredPeriodDays: 5,
  fault: null,
  faultsByNumber: {},
  slowMs: 10_000,
  giantBytes: 256 * 1024 * 1024,
  rateLimit: null,
};

export interface CamaraSimulatorStats {
  requests: number;
  /** Requests by path (`/oauth2/token`, `/sim-swap/v2/retrieve-date`, `/sim-swap/v2/check`). */
  byPath: Record<string, number>;
  byStatus: Record<string, number>;
  tokensIssued: number;
  /** The maxAge of each `check` asked. */
  maxAges: number[];
  streamedBytes: number;
}

export interface CamaraSimulator {
  /** The API root to configure as `<ID>_URL` (…/sim-swap/v2). */
  readonly url: string;
  /** The token endpoint to configure as `<ID>_TOKEN_URL`. */
  readonly tokenUrl: string;
  readonly port: number;
  close(): Promise<void>;
  setOptions(partial: Partial<Omit<CamaraSimulatorOptions, 'port' | 'host'>>): void;
  /** Every token issued so far is refused from now on (401 UNAUTHENTICATED), as when an operator revokes them. */
  revokeTokens(): void;
  stats(): CamaraSimulatorStats;
  resetStats(): void;
}

const MAX_BODY_BYTES = 16 * 1024;

export async function startCamaraSimulator(options: Partial<CamaraSimulatorOptions> = {}): Promise<CamaraSimulator> {
  const settings: CamaraSimulatorOptions = { ...CAMARA_SIMULATOR_DEFAULTS, ...options };
  const emptyStats = (): CamaraSimulatorStats => ({ requests: 0, byPath: {}, byStatus: {}, tokensIssued: 0, maxAges: [], streamedBytes: 0 });
  let stats = emptyStats();
  const tokens = new Map<string, number>();
  const testNumbers = new TestNumberTable();
  const timers = new Set<NodeJS.Timeout>();
  const wait = waiter(timers);
  let window = { startedMs: 0, count: 0 };

  const send = (response: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}, cutShort = false) => {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    sendJson(response, status, body, headers, cutShort);
  };
  const fail = (response: http.ServerResponse, status: number, headers: http.OutgoingHttpHeaders = {}) => {
    const known = CAMARA_HTTP_ERRORS[status] ?? CAMARA_HTTP_ERRORS[500];
    send(response, status, { status, code: known.code, message: known.message }, headers);
  };

  const issueToken = (request: http.IncomingMessage, body: string, response: http.ServerResponse) => {
    if (settings.tokenOutage) return send(response, 503, { error: 'temporarily_unavailable' });
    const expected = Buffer.from(clientAuthorization({ key: settings.clientId, secret: settings.clientSecret }));
    const given = Buffer.from(String(request.headers.authorization ?? ''));
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return send(response, 401, { error: 'invalid_client', error_description: 'Client authentication failed' });
    const form = new URLSearchParams(body);
    if (form.get('grant_type') !== 'client_credentials') return send(response, 400, { error: 'unsupported_grant_type' });
    const token = randomBytes(18).toString('base64url');
    tokens.set(token, Date.now() + settings.tokenLifetimeSeconds * 1000);
    stats.tokensIssued += 1;
    return send(response, 200, { access_token: token, token_type: 'Bearer', expires_in: settings.tokenLifetimeSeconds, scope: form.get('scope') ?? '' });
  };

  const bearerValid = (request: http.IncomingMessage): boolean => {
    const match = /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ''));
    const expires = match ? tokens.get(match[1]) : undefined;
    return expires !== undefined && Date.now() < expires;
  };

  const handle = async (request: http.IncomingMessage, response: http.ServerResponse) => {
    stats.requests += 1;
    const url = new URL(request.url ?? '/', 'http://simulator');
    stats.byPath[url.pathname] = (stats.byPath[url.pathname] ?? 0) + 1;
    const body = await readBody(request);
    if (request.method !== 'POST') return fail(response, 404);
    if (url.pathname === CAMARA_TOKEN_PATH) return issueToken(request, body ?? '', response);
    const operation = url.pathname === `${CAMARA_API_PREFIX}${CAMARA_PATHS.retrieveDate}` ? 'retrieve-date' : url.pathname === `${CAMARA_API_PREFIX}${CAMARA_PATHS.check}` ? 'check' : null;
    if (operation === null) return fail(response, 404);
    if (settings.outage) return fail(response, 503);
    if (!bearerValid(request)) return fail(response, 401);
    if (settings.rateLimit) {
      const now = Date.now();
      if (now - window.startedMs >= settings.rateLimit.windowSeconds * 1000) window = { startedMs: now, count: 0 };
      window.count += 1;
      if (window.count > settings.rateLimit.requests) return fail(response, 429, { 'Retry-After': '1' });
    }
    if (!(await wait(settings.latencyMs, response))) return;
    if (settings.errorRate > 0 && Math.random() < settings.errorRate) return fail(response, 500);

    let parsed: { phoneNumber?: unknown; maxAge?: unknown };
    try {
      parsed = JSON.parse(body ?? '') as typeof parsed;
    } catch {
      return fail(response, 400);
    }
    const e164 = parsed.phoneNumber;
    if (typeof e164 !== 'string' || !/^\+[1-9][0-9]{4,14}$/.test(e164)) return fail(response, 400);
    const maxAge = parsed.maxAge ?? 240;
    if (operation === 'check' && (typeof maxAge !== 'number' || !Number.isInteger(maxAge) || maxAge < 1 || maxAge > CAMARA_MAX_AGE_HOURS)) {
      return send(response, 400, { status: 400, code: 'OUT_OF_RANGE', message: 'Client specified an invalid range.' });
    }
    const fault = settings.faultsByNumber[e164] ?? settings.fault;
    if (fault === 'http-429') return fail(response, 429, { 'Retry-After': '1' });
    if (fault?.startsWith('http-')) return fail(response, Number(fault.slice('http-'.length)));
    const facts = describeNumber(e164);
    const rule = facts.validForPlan ? testNumbers.rule(e164, 'sim_swap') : null;
    if (rule?.kind === 'failure') return fail(response, 500);
    if (!facts.validForPlan) return fail(response, 404);
    if (rule?.kind === 'slow' && !(await wait(rule.delayMs, response))) return;
    if (fault === 'slow' && !(await wait(settings.slowMs, response))) return;

    const hoursAgo = simSwapHoursAgo(e164);
    let answer: Record<string, unknown>;
    if (operation === 'check') {
      stats.maxAges.push(maxAge as number);
      answer = { swapped: fault === 'wrong-type' ? 'yes' : hoursAgo <= (maxAge as number) };
    } else if (fault === 'date-withheld-unmonitored') {
      answer = { latestSimChange: null };
    } else if (fault === 'date-withheld' && hoursAgo > settings.monitoredPeriodDays * 24) {
      // Older than what the operator may keep: no date, and no change within the monitored period.
      answer = { latestSimChange: null, monitoredPeriod: settings.monitoredPeriodDays };
    } else {
      const changedAt = new Date(Date.now() - hoursAgo * 3_600_000).toISOString();
      answer = { latestSimChange: fault === 'no-time-zone' ? changedAt.slice(0, -1) : fault === 'wrong-type' ? Date.parse(changedAt) : changedAt };
    }
    if (fault === 'giant' || fault === 'drip') {
      stats.byStatus[200] = (stats.byStatus[200] ?? 0) + 1;
      stats.streamedBytes += fault === 'giant' ? await streamGiant(response, answer, settings.giantBytes) : await streamDrip(response, answer, settings.slowMs);
      return;
    }
    return send(response, 200, answer, {}, fault === 'partial');
  };

  const server = http.createServer({ keepAliveTimeout: 30_000 }, (request, response) => {
    handle(request, response).catch(() => fail(response, 500));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const origin = `http://${settings.host}:${port}`;
  return {
    url: `${origin}${CAMARA_API_PREFIX}`,
    tokenUrl: `${origin}${CAMARA_TOKEN_PATH}`,
    port,
    setOptions(partial) {
      Object.assign(settings, partial);
      if ('rateLimit' in partial) window = { startedMs: 0, count: 0 };
    },
    revokeTokens: () => tokens.clear(),
    stats: () => structuredClone(stats),
    resetStats() {
      stats = emptyStats();
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

function readBody(request: http.IncomingMessage): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    request.on('end', () => resolve(size > MAX_BODY_BYTES ? null : Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}
