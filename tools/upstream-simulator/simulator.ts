import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { AddressInfo } from 'node:net';
import { DIGEST_HEADERS, digestSignature, HLR_PATHS } from '../../src/provider/adapters/hlr-lookups.protocol';
import { TestNumberTable } from '../../src/provider/adapters/test-numbers';
import { describeNumber } from '../../src/provider/numbering/numbering-plan';
import { BODY_FAULTS, BodyFault, breakSchema, hlrAnswer, mnpAnswer, ntAnswer, numberFacts } from './answers';

/**
 * A stand-alone stand-in for the HLR Lookups API v2 (hlr-lookups.com): same endpoints, same request
 * signing, answers by the shared test-number table (docs/api.md) with every documented field
 * (answers.ts), and a switch for each documented failure (SIMULATED_FAULTS). node:http only, so tests
 * and the benchmark run it in-process on port 0, and `npm run upstream` runs it alone.
 */

/** Answered with that HTTP status and an `errors` body instead of an answer. */
export const HTTP_FAULTS = ['http-400', 'http-401', 'http-402', 'http-403', 'http-404', 'http-429', 'http-500', 'http-503'] as const;
/**
 * Every failure the simulator can play, for every lookup (`fault`) or for chosen numbers
 * (`faultsByNumber`): the body faults of answers.ts, the HTTP faults, `partial` (the JSON is cut
 * short mid-answer), `slow` (the answer comes after `slowMs`), `giant` (a valid answer padded to
 * `giantBytes`, streamed without a Content-Length as fast as the client reads) and `drip` (the
 * headers at once, then the answer a few bytes at a time over `slowMs`).
 */
export const SIMULATED_FAULTS = [...BODY_FAULTS, ...HTTP_FAULTS, 'partial', 'slow', 'giant', 'drip'] as const;
export type SimulatedFault = (typeof SIMULATED_FAULTS)[number];

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
  /** A fault played on every lookup (null: none). */
  fault: SimulatedFault | null;
  /** Faults for chosen E.164 numbers; they win over `fault`. */
  faultsByNumber: Readonly<Record<string, SimulatedFault>>;
  /** How long a `slow` fault waits before answering, and how long a `drip` answer takes. */
  slowMs: number;
  /** The size of a `giant` answer, in bytes. */
  giantBytes: number;
  /** The upstream's request limit: more signed requests than this in a window are answered 429 with Retry-After. */
  rateLimit: { requests: number; windowSeconds: number } | null;
  /** Account balance answered by GET /balance, lowered by the cost of every answered lookup. */
  balance: number;
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
  fault: null,
  faultsByNumber: {},
  slowMs: 10_000,
  giantBytes: 256 * 1024 * 1024,
  rateLimit: null,
  balance: 100,
};

export interface UpstreamSimulatorStats {
  /** Every request received, whatever its outcome. */
  requests: number;
  /** Requests received per endpoint path (e.g. '/hlr-lookup'). */
  byPath: Record<string, number>;
  /** Requests per HTTP status answered. */
  byStatus: Record<string, number>;
  /** Bytes of `giant` and `drip` answers the client took before it finished or went away. */
  streamedBytes: number;
  /** `giant` and `drip` answers ended (finished, or the client went away): `streamedBytes` counts them. */
  streamsEnded: number;
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
  const testNumbers = new TestNumberTable();
  const timers = new Set<NodeJS.Timeout>();

  /** Waits `ms`, or gives up quietly when the client goes away (so a 10 s answer never outlives its caller). */
  const wait = waiter(timers);

  const send = (response: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}, cutShort = false) => {
    stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
    sendJson(response, status, body, headers, cutShort);
  };
  const fail = (response: http.ServerResponse, status: number, code: string, message: string, headers: http.OutgoingHttpHeaders = {}) =>
    send(response, status, { errors: [{ code, message }] }, headers);
  const rateLimited = (response: http.ServerResponse, retryAfterSeconds: number) =>
    fail(response, 429, 'TOO_MANY_REQUESTS', 'API request limit exceeded', { 'Retry-After': String(retryAfterSeconds) });

  let window = { startedMs: 0, count: 0 };
  /** Seconds until the current window ends when the limit is exceeded, else null (and the request counts). */
  const overLimit = (): number | null => {
    const limit = settings.rateLimit;
    if (!limit) return null;
    const now = Date.now();
    if (now - window.startedMs >= limit.windowSeconds * 1000) window = { startedMs: now, count: 0 };
    window.count += 1;
    if (window.count <= limit.requests) return null;
    return Math.max(1, Math.ceil((window.startedMs + limit.windowSeconds * 1000 - now) / 1000));
  };

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
    // Unsigned helpers: the PHP SDK asks /time before it signs anything.
    if (route === 'ping') return send(response, 200, { success: true });
    if (route === 'time') return send(response, 200, { time: Math.floor(Date.now() / 1000) });

    const authProblem = checkSignature(request, path, method, body, settings);
    if (authProblem) return fail(response, 401, 'UNAUTHORIZED', authProblem);
    const retryAfter = overLimit();
    if (retryAfter !== null) return rateLimited(response, retryAfter);

    if (!(await wait(settings.latencyMs, response))) return;
    if (settings.errorRate > 0 && Math.random() < settings.errorRate) {
      return fail(response, 500, 'INTERNAL_ERROR', 'simulated random upstream error');
    }
    if (route === 'auth-test') return send(response, 200, { success: true });
    if (route === 'balance') return send(response, 200, { balance: settings.balance.toFixed(4) });

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

    const fault = settings.faultsByNumber[e164] ?? settings.fault;
    if (fault === 'http-429') return rateLimited(response, 1);
    if (fault?.startsWith('http-')) {
      const status = Number(fault.slice('http-'.length));
      return fail(response, status, `HTTP_${status}`, `simulated HTTP ${status}`);
    }
    const rule = describeNumber(e164).validForPlan ? testNumbers.rule(e164, route) : null;
    if (rule?.kind === 'failure') return fail(response, 503, 'NETWORK_FAILURE', 'simulated upstream failure for this number');
    if (rule?.kind === 'slow' && !(await wait(rule.delayMs, response))) return;
    if (fault === 'slow' && !(await wait(settings.slowMs, response))) return;

    const bodyFault = (BODY_FAULTS as readonly string[]).includes(fault ?? '') ? (fault as BodyFault) : null;
    const facts = await numberFacts(e164, rule, bodyFault);
    const answer = route === 'hlr-lookup' ? hlrAnswer(facts) : route === 'nt-lookup' ? await ntAnswer(facts) : mnpAnswer(facts);
    settings.balance = Math.max(0, settings.balance - Number(answer.cost));
    if (fault === 'giant' || fault === 'drip') {
      stats.byStatus[200] = (stats.byStatus[200] ?? 0) + 1;
      const written = fault === 'giant' ? await streamGiant(response, answer, settings.giantBytes) : await streamDrip(response, answer, settings.slowMs);
      stats.streamedBytes += written;
      stats.streamsEnded += 1;
      return;
    }
    return send(response, 200, breakSchema(answer, bodyFault), {}, fault === 'partial');
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
      // A new limit starts a new window: counts from before must not decide the first answers under it.
      if ('rateLimit' in partial) window = { startedMs: 0, count: 0 };
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

const ROUTES: Record<string, 'hlr-lookup' | 'nt-lookup' | 'mnp-lookup' | 'auth-test' | 'balance' | 'ping' | 'time'> = {
  [`POST ${HLR_PATHS.hlrLookup}`]: 'hlr-lookup',
  [`POST ${HLR_PATHS.ntLookup}`]: 'nt-lookup',
  [`POST ${HLR_PATHS.mnpLookup}`]: 'mnp-lookup',
  [`GET ${HLR_PATHS.authTest}`]: 'auth-test',
  [`GET ${HLR_PATHS.balance}`]: 'balance',
  [`GET ${HLR_PATHS.ping}`]: 'ping',
  [`GET ${HLR_PATHS.time}`]: 'time',
};

function emptyStats(): UpstreamSimulatorStats {
  return { requests: 0, byPath: {}, byStatus: {}, streamedBytes: 0, streamsEnded: 0 };
}

/** A wait of `ms` that resolves false as soon as the client goes away; its timer is kept in `timers` for close(). */
export function waiter(timers: Set<NodeJS.Timeout>): (ms: number, response: http.ServerResponse) => Promise<boolean> {
  return (ms, response) =>
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
}

/** A JSON answer with its Content-Length; `cutShort` sends only its first half (a broken answer). */
export function sendJson(response: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}, cutShort = false): void {
  if (response.writableEnded || response.destroyed) return;
  const whole = JSON.stringify(body);
  const text = cutShort ? whole.slice(0, Math.floor(whole.length / 2)) : whole;
  response.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

/** Resolves with whether the response may take more (false once the client went away). */
function writeChunk(response: http.ServerResponse, chunk: string): Promise<boolean> {
  if (response.destroyed || response.writableEnded) return Promise.resolve(false);
  if (response.write(chunk)) return Promise.resolve(!response.destroyed);
  return new Promise((resolve) => {
    const done = (open: boolean) => {
      response.off('drain', onDrain);
      response.off('close', onClose);
      resolve(open);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    response.once('drain', onDrain);
    response.once('close', onClose);
  });
}

/**
 * A valid answer padded (an unknown field first) to `totalBytes`, chunked, written only as fast as the
 * client reads: the bytes written are the bytes the client took. Returns them.
 */
export async function streamGiant(response: http.ServerResponse, answer: object, totalBytes: number): Promise<number> {
  const rest = JSON.stringify(answer).slice(1);
  response.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
  let written = 0;
  const head = '{"padding":"';
  if (!(await writeChunk(response, head))) return written;
  written += head.length;
  const block = 'x'.repeat(64 * 1024);
  while (written + block.length + rest.length + 2 < totalBytes) {
    if (!(await writeChunk(response, block))) return written;
    written += block.length;
  }
  const tail = `",${rest}`;
  if (await writeChunk(response, tail)) written += tail.length;
  response.end();
  return written;
}

/** The answer a few bytes at a time, spread over `durationMs`. Returns the bytes the client took. */
export async function streamDrip(response: http.ServerResponse, answer: object, durationMs: number): Promise<number> {
  const text = JSON.stringify(answer);
  const pieces = Math.max(1, Math.ceil(text.length / 8));
  response.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8' });
  let written = 0;
  for (let i = 0; i < pieces; i++) {
    await new Promise((resolve) => setTimeout(resolve, durationMs / pieces));
    const piece = text.slice(i * 8, i * 8 + 8);
    if (!(await writeChunk(response, piece))) return written;
    written += piece.length;
  }
  response.end();
  return written;
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
