import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { InFlightList } from './in-flight-list';

const IDLE_SWEEP_MS = 50;

/**
 * Graceful stop of the HTTP server: stop accepting connections, let the requests already running
 * finish (bounded), and close keep-alive connections as soon as they are idle, so the process can
 * exit. Nest's app.close() alone runs the modules' destroy hooks first (upstream agents, Redis)
 * while requests may still need them; main.ts drains with this before calling it.
 */
export class HttpDrain {
  /** Not a Set: see InFlightList (a Set here had every request promoted to the old generation). */
  private readonly inFlight = new InFlightList<ServerResponse>();
  private draining = false;
  private onIdle: (() => void) | undefined;

  constructor(private readonly server: Server) {
    server.on('request', (_req: IncomingMessage, res: ServerResponse) => {
      const answered = this.inFlight.add(res);
      // A request that arrives on an old keep-alive connection during the drain is still served, then its connection closed.
      if (this.draining) res.setHeader('Connection', 'close');
      res.once('close', () => {
        answered();
        if (this.inFlight.size === 0) this.onIdle?.();
      });
    });
  }

  get requestsInFlight(): number {
    return this.inFlight.size;
  }

  /** Resolves with the number of requests still running when `timeoutMs` ran out (0: all answered). */
  async drain(timeoutMs: number): Promise<number> {
    this.draining = true;
    for (const res of this.inFlight.items()) if (!res.headersSent) res.setHeader('Connection', 'close');
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const sweep = setInterval(() => this.server.closeIdleConnections(), IDLE_SWEEP_MS);
    this.server.closeIdleConnections();
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        new Promise<void>((resolve) => {
          this.onIdle = resolve;
          if (this.inFlight.size === 0) resolve();
        }),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      ]);
    } finally {
      clearTimeout(timer);
      clearInterval(sweep);
      this.onIdle = undefined;
    }
    const abandoned = this.inFlight.size;
    if (abandoned > 0) this.server.closeAllConnections();
    else this.server.closeIdleConnections();
    // A connection opened just before close() and not yet idle: give it a moment, then cut it.
    const straggler = setTimeout(() => this.server.closeAllConnections(), 1000);
    await closed;
    clearTimeout(straggler);
    return abandoned;
  }
}
