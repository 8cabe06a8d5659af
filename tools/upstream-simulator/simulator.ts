import { randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import {
  DIGEST_HEADERS,
  digestSignature,
  HLR_PATHS,
  HlrLookupResponse,
  MnpLookupResponse,
  NtLookupResponse,
  upstreamNumberType,
} from '../../src/provider/adapters/hlr-lookups.protocol';
import { Alternation, alternatingAnswer, portedCarrier, testNumberRule } from '../../src/provider/adapters/test-numbers';
import { describeNumber, originalCarrier } from '../../src/provider/numbering-plan';

/**
 * A stand-alone stand-in for the HLR Lookups API v2 (hlr-lookups.com): same endpoints, same request
 * signing, answers by the shared test-number table (docs/api.md). Dependency-free (node:http)
 * so tests and the benchmark can run it in-process on port 0, and `npm run upstream` can run it alone.
 */
export interface UpstreamSimulatorOptions {
  /** 0 (default) picks a free port. */
  port: number;
  host: string;
  /** Added before every answer (not before 401/503-outage rejections). */
  latencyMs: number;
  /** Share of requests (0..1) answered 500 at random. */
  errorRate: number;
  /** Every request answered 503. */
  outage: boolean;
  key: string;
  secret: string;
  /** Signed timestamps further than this from the simulator's clock are refused (401). */
  maxClockSkewSeconds: number;
}

export const SIMULATOR_DEFAULTS: Readonly<UpstreamSimulatorOptions> = {
  port: 0,
  host: '127.0.0.1',
  latencyMs: 0,
  errorRate: 0,
  outage: false,
  key: 'sim-key',
  secret: 'sim-secret',
  maxClockSkewSeconds: 300,
};

export interface UpstreamSimulatorStats {
  /** Every request received, whatever its outcome. */
  requests: number;
  /** Requests received per endpoint path (e.g. '/hlr-lookup'). */
  byPath: Record<string, number>;
  /** Requests per HTTP status answered. */
  byStatus: Record<string, number>;
}

export interface UpstreamSimulator {
  /** Base URL to configure as HLR_LOOKUPS_URL, e.g. http://127.0.0.1:40123 */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
  setOptions(partial: Partial<Omit<UpstreamSimulatorOptions, 'port' | 'host'>>): void;
  stats(): UpstreamSimulatorStats;
  resetStats(): void;
}

/** The real API lives under /api/v2; the simulator answers both with and without that prefix. */
const API_PREFIX = '/api/v2';
const MAX_BODY_BYTES = 64 * 1024;

export async function startUpstreamSimulator(options: Partial<UpstreamSimulatorOptions> = {}): Promise<UpstreamSimulator> {
  const settings: UpstreamSimulatorOptions = { ...SIMULATOR_DEFAULTS, ...options };
  let stats = emptyStats();
  const timers = new Set<NodeJS.Timeout>();
  const alternation = new Alternation();

  /** Waits `ms`, or gives up quietly when the client goes away (so a 10 s answer never outlives its caller). */
  const wait = (ms: number, response: http.ServerResponse) =>
    new Promise<boolean>((resolve) => {
      if (ms <= 0) return resolve(true);
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve(true);
      }, ms);
      timers.add(timer);
      response.once('close', () => {
        clearTimeout(timer);
        timers.delete(timer);
        resolve(false);
      });
    });

  const send = (response: http.ServerResponse, status: number, body: unknown) => {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    if (response.writableEnded || response.destroyed) return;
    const text = JSON.stringify(body);
    response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
    response.end(text);
  };
  const fail = (response: http.ServerResponse, status: number, code: string, message: string) =>
    send(response, status, { errors: [{ code, message }] });

  const handle = async (request: http.IncomingMessage, response: http.ServerResponse) => {
    const method = request.method ?? 'GET';
    const rawPath = new URL(request.url ?? '/', 'http://simulator').pathname;
    const path = rawPath.startsWith(`${API_PREFIX}/`) ? rawPath.slice(API_PREFIX.length) : rawPath;
    stats.requests += 1;
    stats.byPath[path] = (stats.byPath[path] ?? 0) + 1;

    const body = await readBody(request);
    if (body === null) return fail(response, 413, 'PAYLOAD_TOO_LARGE', 'request body too large');
    if (settings.outage) return fail(response, 503, 'SERVICE_UNAVAILABLE', 'simulated outage');

    const route = ROUTES[`${method} ${path}`];
    if (!route) return fail(response, 404, 'NOT_FOUND', `no route ${method} ${path}`);

    const authProblem = checkSignature(request, path, method, body, settings);
    if (authProblem) return fail(response, 401, 'UNAUTHORIZED', authProblem);

    if (!(await wait(settings.latencyMs, response))) return;
    if (settings.errorRate > 0 && Math.random() < settings.errorRate) {
      return fail(response, 500, 'INTERNAL_ERROR', 'simulated random upstream error');
    }
    if (route === 'auth-test') return send(response, 200, { success: true });

    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(body) as Record<string, unknown>;
    } catch {
      return fail(response, 400, 'INVALID_JSON', 'body is not JSON');
    }
    const field = route === 'nt-lookup' ? 'number' : 'msisdn';
    const raw = payload?.[field];
    if (typeof raw !== 'string' || !/\d/.test(raw)) return fail(response, 400, 'INVALID_PARAMETER', `${field} is required`);
    const e164 = `+${raw.replace(/\D/g, '')}`;

    const number = describeNumber(e164);
    const rule = number.validForPlan ? testNumberRule(e164) : null;
    if (rule?.kind === 'failure') return fail(response, 503, 'NETWORK_FAILURE', 'simulated upstream failure for this number');
    if (rule?.kind === 'slow' && !(await wait(rule.delayMs, response))) return;

    const original = await originalCarrier(e164);
    const alternating = rule?.kind === 'alternating' ? alternatingAnswer(rule, alternation, `${route}:${e164}`) : undefined;
    const isPorted = rule?.kind === 'answer' || rule?.kind === 'slow' ? rule.isPorted : (alternating?.otherOperator ?? false);
    const ported = isPorted ? portedCarrier(number.region, original) : null;
    const common = { id: randomUUID().replace(/-/g, '').slice(0, 12), timestamp: new Date().toISOString() };

    if (route === 'hlr-lookup') {
      const answer: HlrLookupResponse = {
        ...common,
        msisdn: e164,
        connectivity_status: alternating?.status ?? (rule && rule.kind !== 'alternating' ? rule.status : 'INVALID_MSISDN'),
        mccmnc: null,
        original_network_name: original,
        original_country_code: number.region,
        is_ported: isPorted,
        ported_network_name: ported,
        is_roaming: false,
      };
      return send(response, 200, answer);
    }
    if (route === 'nt-lookup') {
      const answer: NtLookupResponse = {
        ...common,
        number: e164,
        number_type: upstreamNumberType(number.lineType),
        query_status: 'OK',
        is_valid: number.validForPlan,
        original_network_name: original,
        original_country_code: number.region,
      };
      return send(response, 200, answer);
    }
    const answer: MnpLookupResponse = {
      ...common,
      msisdn: e164,
      query_status: 'OK',
      is_ported: isPorted,
      original_network_name: original,
      ported_network_name: ported,
    };
    return send(response, 200, answer);
  };

  const server = http.createServer({ keepAliveTimeout: 30_000 }, (request, response) => {
    handle(request, response).catch((error: unknown) => {
      console.error('[upstream-simulator] handler crashed', error);
      fail(response, 500, 'INTERNAL_ERROR', 'simulator bug');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.port, settings.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = settings.host.includes(':') ? `[${settings.host}]` : settings.host === '0.0.0.0' ? '127.0.0.1' : settings.host;

  return {
    url: `http://${hostForUrl}:${port}`,
    port,
    setOptions(partial) {
      Object.assign(settings, partial);
    },
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

const ROUTES: Record<string, 'hlr-lookup' | 'nt-lookup' | 'mnp-lookup' | 'auth-test'> = {
  [`POST ${HLR_PATHS.hlrLookup}`]: 'hlr-lookup',
  [`POST ${HLR_PATHS.ntLookup}`]: 'nt-lookup',
  [`POST ${HLR_PATHS.mnpLookup}`]: 'mnp-lookup',
  [`GET ${HLR_PATHS.authTest}`]: 'auth-test',
};

function emptyStats(): UpstreamSimulatorStats {
  return { requests: 0, byPath: {}, byStatus: {} };
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

/** Null when the request is signed by the configured key and secret within the allowed clock skew. */
function checkSignature(
  request: http.IncomingMessage,
  path: string,
  method: string,
  body: string,
  settings: UpstreamSimulatorOptions,
): string | null {
  const key = request.headers[DIGEST_HEADERS.key];
  const timestampText = request.headers[DIGEST_HEADERS.timestamp];
  const signature = request.headers[DIGEST_HEADERS.signature];
  if (typeof key !== 'string' || typeof timestampText !== 'string' || typeof signature !== 'string') {
    return 'missing X-Digest-Key, X-Digest-Timestamp or X-Digest-Signature';
  }
  if (key !== settings.key) return 'unknown API key';
  if (!/^\d{1,12}$/.test(timestampText)) return 'X-Digest-Timestamp must be unix seconds';
  const timestamp = Number(timestampText);
  if (Math.abs(Date.now() / 1000 - timestamp) > settings.maxClockSkewSeconds) return 'X-Digest-Timestamp too old or in the future';
  const expected = Buffer.from(digestSignature(settings.secret, path, timestamp, method, body), 'utf8');
  const given = Buffer.from(signature.toLowerCase(), 'utf8');
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'bad X-Digest-Signature';
  return null;
}
