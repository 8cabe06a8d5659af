/**
 * A local receiver for the service's callbacks and account events, to see one arrive on your machine:
 *
 *   WEBHOOK_SECRET=whsec_... npm run webhook-receiver          # listens on http://127.0.0.1:4000/
 *   WEBHOOK_SECRET=whsec_... npm run webhook-receiver -- --port 4100
 *
 * Every POST is printed (any other request is answered 200, unprinted: a readiness probe) with whether its X-Signature verifies with WEBHOOK_SECRET (GET /api/v1/settings
 * shows yours), as docs/api.md §9 describes; it answers 204 to a verified one and 401 otherwise, so the
 * service retries a callback it signed with another secret. The service refuses callbacks to this machine
 * unless it runs with CALLBACK_ALLOW_PRIVATE_NETWORKS=true (a development switch).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';

/** Refused when further than this from now: a captured callback cannot be replayed later. */
const MAX_AGE_SECONDS = 300;

export function verifySignature(secret: string, timestamp: string | undefined, signatures: string | undefined, rawBody: string, nowSeconds = Date.now() / 1000): boolean {
  if (!/^\d+$/.test(timestamp ?? '') || Math.abs(nowSeconds - Number(timestamp)) > MAX_AGE_SECONDS) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest();
  return (signatures ?? '').split(',').some((signature) => {
    const given = Buffer.from(signature.trim(), 'hex');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

export function startWebhookReceiver(port: number, secret: string | undefined, print: (line: string) => void): Promise<Server> {
  const server = createServer((request, response) => {
    // Anything but a POST (a readiness probe: `until curl -sf localhost:4000; do …`) is answered, not printed.
    if (request.method !== 'POST') {
      response.writeHead(200, { 'Content-Type': 'text/plain' }).end('Phone Filter webhook receiver: POST callbacks here.\n');
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const verified = secret !== undefined && verifySignature(secret, header(request, 'x-signature-timestamp'), header(request, 'x-signature'), body);
      const verdict = secret === undefined ? 'signature NOT checked (set WEBHOOK_SECRET)' : verified ? 'signature OK' : 'signature WRONG (another secret, or too old)';
      print(`${new Date().toISOString()} ${request.method} ${request.url}: ${verdict}\n  ${body}`);
      response.writeHead(secret === undefined || verified ? 204 : 401).end();
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

if (require.main === module) {
  const portArgument = process.argv.indexOf('--port');
  const port = portArgument > 0 ? Number(process.argv[portArgument + 1]) : 4000;
  const secret = process.env.WEBHOOK_SECRET || undefined;
  void startWebhookReceiver(port, secret, (line) => console.log(line)).then((server) => {
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    console.log(`Waiting for callbacks on ${url} (${secret ? 'verifying X-Signature with WEBHOOK_SECRET' : 'WEBHOOK_SECRET unset: signatures not checked'}).`);
    console.log(`Use it as callback_url (or webhook_url) with the service started with CALLBACK_ALLOW_PRIVATE_NETWORKS=true. Ctrl-C stops it.`);
  });
}
