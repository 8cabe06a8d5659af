import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import type { Request, Response } from 'express';
import { callerOf } from './caller';

/**
 * `gone()` over a real connection: a client that sends its request and closes its side (FIN) is gone
 * from the moment Node reads the FIN, not a turn later when it destroys the socket (the charge could
 * run in between: a fault-suite run on a busy machine charged such a call).
 */
describe('callerOf(request, response).gone()', () => {
  let server: Server;
  let seen: (request: IncomingMessage, response: ServerResponse) => void;
  beforeAll(async () => {
    server = createServer((request, response) => seen(request, response));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Sends one complete POST, then its FIN; resolves with what `gone()` said while the request waited, and once the FIN was read. */
  function callThenLeave(): Promise<{ waiting: boolean; finRead: boolean }> {
    return new Promise((resolve) => {
      seen = (request, response) => {
        const caller = callerOf({ arrivedAt: 0, socket: request.socket } as unknown as Request, response as unknown as Response);
        const waiting = caller.gone();
        request.resume();
        // Registered after the server's own 'end' listener (added when the connection opened), which ends the socket's writing side.
        request.socket.once('end', () => resolve({ waiting, finRead: caller.gone() }));
      };
      const client = connect((server.address() as { port: number }).port, '127.0.0.1', () => {
        client.write('POST / HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
        client.end();
      });
      client.on('error', () => undefined);
    });
  }

  it('is false while the client waits for its answer, and true as soon as its FIN is read (before Node destroys the socket)', async () => {
    expect(await callThenLeave()).toEqual({ waiting: false, finRead: true });
  });
});
