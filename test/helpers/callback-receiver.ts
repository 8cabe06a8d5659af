import http from 'node:http';
import { AddressInfo } from 'node:net';

export interface ReceivedCall {
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface CallbackReceiver {
  url: string;
  calls: ReceivedCall[];
  close: () => Promise<void>;
}

/** A callback receiver on a free local port that answers `statuses` in turn (then 200). */
export async function startReceiver(statuses: number[] = [], path = '/hooks/bulk'): Promise<CallbackReceiver> {
  const calls: ReceivedCall[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      calls.push({ headers: req.headers, body });
      res.writeHead(statuses.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}${path}`, calls, close: () => new Promise((resolve) => server.close(() => resolve())) };
}
