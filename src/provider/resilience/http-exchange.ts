import http from 'node:http';
import https from 'node:https';
import { UpstreamConnectionError, UpstreamFailure, ProviderUnavailableError } from '../port/upstream-failure';

/** One HTTP request to an upstream, as its adapter's protocol writes it. */
export interface UpstreamRequest {
  method: 'GET' | 'POST';
  /** Below the upstream's base URL, e.g. `/hlr-lookup`. */
  path: string;
  headers: Record<string, string | number>;
  body?: string;
}

/** The complete answer, read to its end within the byte cap. */
export interface UpstreamResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** Socket-level errors where the request most likely never reached the upstream: worth one retry. */
const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/**
 * Sends one request and reads the whole answer, never more than `maxBytes` of it: a bigger answer (by
 * its Content-Length, or by what arrives) is cut off at once, its connection destroyed, and fails as
 * `oversized`. `signal` ends the request whenever it fires, headers received or not: the caller's
 * deadline covers the whole response, not each chunk.
 */
export function sendUpstreamRequest(
  base: URL,
  agent: http.Agent,
  request: UpstreamRequest,
  { maxBytes, signal, deadlineMs }: { maxBytes: number; signal: AbortSignal; deadlineMs: number },
): Promise<UpstreamResponse> {
  const transport = base.protocol === 'https:' ? https : http;
  const path = `${base.pathname === '/' ? '' : base.pathname}${request.path}`;
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      outcome();
    };
    const timedOut = () => new ProviderUnavailableError(`upstream gave no answer within ${deadlineMs} ms`, 'timeout');
    const outgoing = transport.request(
      { protocol: base.protocol, hostname: base.hostname, port: base.port || undefined, path, method: request.method, headers: request.headers, agent },
      (response) => {
        const tooBig = () => new UpstreamFailure(`upstream answer is larger than ${maxBytes} bytes`, 'upstream_error', 'oversized');
        const declared = Number(response.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) {
          finish(() => reject(tooBig()));
          outgoing.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            finish(() => reject(tooBig()));
            outgoing.destroy();
            return;
          }
          chunks.push(chunk);
        });
        response.on('error', (error) => finish(() => reject(signal.aborted ? timedOut() : new ProviderUnavailableError(`upstream response broken: ${error.message}`, 'network'))));
        response.on('aborted', () => finish(() => reject(signal.aborted ? timedOut() : new ProviderUnavailableError('upstream response cut off', 'network'))));
        response.on('end', () => finish(() => resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks) })));
      },
    );
    const onAbort = () => {
      finish(() => reject(timedOut()));
      outgoing.destroy();
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    outgoing.on('error', (error: NodeJS.ErrnoException) => {
      if (signal.aborted) return finish(() => reject(timedOut()));
      // Never the path in the message: it may carry the number (Twilio's /v2/PhoneNumbers/{e164}).
      const reason = `upstream unreachable (${error.code ?? 'connection error'})`;
      finish(() => reject(error.code && CONNECTION_ERROR_CODES.has(error.code) ? new UpstreamConnectionError(reason) : new ProviderUnavailableError(reason, 'network')));
    });
    outgoing.end(request.body ?? '');
  });
}
