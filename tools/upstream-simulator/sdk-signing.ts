import { createHmac } from 'node:crypto';
import { digestHeaders, HLR_PATHS } from '../../src/provider/adapters/hlr-lookups.protocol';

/**
 * How each official HLR Lookups SDK signs a request, written from reading them (our own code; the
 * formulas and their sources are in docs/upstream-hlr-lookups.md, "Request signing"). `npm run
 * upstream -- --check-sdk` and sdk-signing.spec.ts send requests signed these ways to the simulator,
 * and compare them with the adapter's own headers, so the simulator, the adapter and the SDKs cannot
 * drift apart.
 */
export type Sdk = 'node' | 'php' | 'ruby';
export const SDKS: readonly Sdk[] = ['node', 'php', 'ruby'];

export interface SdkRequest {
  method: 'GET' | 'POST';
  /** The endpoint below the API base, e.g. /hlr-lookup. */
  endpoint: string;
  params: Record<string, string> | null;
}

/** The body text each SDK sends (empty for GET). */
export function sdkBody(sdk: Sdk, request: SdkRequest): string {
  if (request.method === 'GET') return '';
  const params = request.params ?? {};
  // node-sdk: JSON.stringify(data) always; php-sdk and ruby-sdk: nothing when there are no params.
  if (sdk === 'node') return JSON.stringify(params);
  if (Object.keys(params).length === 0) return '';
  return sdk === 'php' ? phpJsonEncode(params) : JSON.stringify(params);
}

/** PHP's json_encode() defaults: "/" escaped as "\/", non-ASCII as \uXXXX. */
function phpJsonEncode(value: unknown): string {
  return JSON.stringify(value)
    .replace(/\//g, '\\/')
    .replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The three X-Digest headers: HMAC-SHA256(secret, endpoint + timestamp + METHOD + body), hex. */
export function sdkHeaders(sdk: Sdk, request: SdkRequest, key: string, secret: string, timestamp: number): Record<string, string> {
  const signed = `${request.endpoint}${timestamp}${request.method.toUpperCase()}${sdkBody(sdk, request)}`;
  return {
    'X-Digest-Key': key,
    'X-Digest-Signature': createHmac('sha256', secret).update(signed).digest('hex'),
    'X-Digest-Timestamp': String(timestamp),
  };
}

/** The requests every check sends: the endpoints the SDK READMEs show, plus /balance. */
export const SDK_REQUESTS: readonly SdkRequest[] = [
  { method: 'GET', endpoint: HLR_PATHS.authTest, params: null },
  { method: 'GET', endpoint: HLR_PATHS.balance, params: null },
  { method: 'POST', endpoint: HLR_PATHS.hlrLookup, params: { msisdn: '+447400123456' } },
  { method: 'POST', endpoint: HLR_PATHS.ntLookup, params: { number: '+4989702626' } },
  { method: 'POST', endpoint: HLR_PATHS.mnpLookup, params: { msisdn: '+447400120002' } },
];

export interface SdkCheckResult {
  sdk: Sdk;
  method: string;
  endpoint: string;
  /** HTTP status with the right secret (200 expected) and with a wrong one (401 expected). */
  status: number;
  wrongSecretStatus: number;
  /** The adapter's headers for the same request and timestamp are byte-for-byte the SDK's. */
  sameAsAdapter: boolean;
}

/** Sends every request of SDK_REQUESTS the way each SDK would, to `baseUrl` (the API base, e.g. .../api/v2). */
export async function checkSdkSigning(baseUrl: string, key: string, secret: string): Promise<SdkCheckResult[]> {
  const results: SdkCheckResult[] = [];
  for (const sdk of SDKS) {
    for (const request of SDK_REQUESTS) {
      const timestamp = await sdkTimestamp(sdk, baseUrl);
      const body = sdkBody(sdk, request);
      const send = (withSecret: string) =>
        fetch(`${baseUrl}${request.endpoint}${sdk === 'ruby' && request.method === 'GET' ? '?' : ''}`, {
          method: request.method,
          headers: { Accept: 'application/json', 'Content-Type': 'application/json', ...sdkHeaders(sdk, request, key, withSecret, timestamp) },
          body: request.method === 'GET' ? undefined : body,
        }).then(async (response) => {
          await response.arrayBuffer();
          return response.status;
        });
      const adapter = digestHeaders({ key, secret }, request.endpoint, request.method, body, timestamp * 1000);
      results.push({
        sdk,
        method: request.method,
        endpoint: request.endpoint,
        status: await send(secret),
        wrongSecretStatus: await send(`${secret}-wrong`),
        sameAsAdapter: sameHeaders(adapter, sdkHeaders(sdk, request, key, secret, timestamp)),
      });
    }
  }
  return results;
}

function sameHeaders(a: Record<string, string>, b: Record<string, string>): boolean {
  const text = (headers: Record<string, string>) => JSON.stringify(Object.entries(headers).sort(([x], [y]) => x.localeCompare(y)));
  return text(a) === text(b);
}

/** The php-sdk signs with the server's clock from GET /time (local time when that fails); the others use local time. */
async function sdkTimestamp(sdk: Sdk, baseUrl: string): Promise<number> {
  const local = Math.floor(Date.now() / 1000);
  if (sdk !== 'php') return local;
  try {
    const response = await fetch(`${baseUrl}${HLR_PATHS.time}`);
    const data = (await response.json()) as { time?: unknown };
    return response.status === 200 && typeof data.time === 'number' ? data.time : local;
  } catch {
    return local;
  }
}
