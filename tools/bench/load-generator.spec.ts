import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ManualClock } from '../../test/helpers/manual-clock';
import { paced, paceSends } from './load-generator';

/** A server that notes when each request arrived and with which Authorization header, and answers 204. */
async function recordingServer(answer: (index: number) => { status: number; afterMs: number } = () => ({ status: 204, afterMs: 0 })): Promise<{
  url: string;
  arrivals: number[];
  authorizations: string[];
  close: () => Promise<void>;
}> {
  const arrivals: number[] = [];
  const authorizations: string[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    const { status, afterMs } = answer(arrivals.length);
    arrivals.push(performance.now());
    authorizations.push(req.headers.authorization ?? '');
    req.resume();
    req.on('end', () => setTimeout(() => res.writeHead(status).end(), afterMs));
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    arrivals,
    authorizations,
    close: () => new Promise<void>((closed) => server.close(() => closed())),
  };
}

/** How many of `times` fall in each window of `widthMs` from `from` (the last window may be partial). */
function perWindow(times: number[], from: number, widthMs: number, windows: number): number[] {
  const counts = Array<number>(windows).fill(0);
  for (const at of times) counts[Math.floor((at - from) / widthMs)]++;
  return counts;
}

/**
 * The fixed-rate bench's pacing (docs/benchmark.md): a fixed rate must reach the server spread over each
 * second, as an operator's traffic does, not as a burst at its start. Proven on a clock the test moves.
 */
describe('the even pacing schedule', () => {
  it('sends request i at start + i/rate, each at its due time: 400/s for 2 s is exactly 40 in every 100 ms', async () => {
    const clock = new ManualClock(0);
    const sends: Array<{ due: number; at: number }> = [];
    let done = false;
    void paceSends({ total: 800, rate: 400, start: 5 }, clock, (due) => sends.push({ due, at: clock.now() })).then(() => (done = true));
    while (!done) await clock.advance(1);
    expect(sends).toHaveLength(800);
    expect(sends.map((send) => send.due)).toEqual(Array.from({ length: 800 }, (_, i) => 5 + i * 2.5));
    // Each sent in the millisecond it fell due (the clock moves 1 ms at a time here).
    for (const send of sends) expect(send.at - send.due).toBeGreaterThanOrEqual(0);
    for (const send of sends) expect(send.at - send.due).toBeLessThan(1);
    expect(perWindow(sends.map((send) => send.at - 5), 0, 100, 20)).toEqual(Array(20).fill(40));
  });

  it('after a late timer (the generator starved for 300 ms), sends what fell due at once, in order, none skipped or early, then paces on', async () => {
    const clock = new StarvedClock();
    const sends: Array<{ due: number; at: number }> = [];
    let done = false;
    void paceSends({ total: 100, rate: 100, start: 0 }, clock, (due) => sends.push({ due, at: clock.now() })).then(() => (done = true));
    clock.fireAt(0);
    expect(sends).toEqual([{ due: 0, at: 0 }]);
    clock.fireAt(305); // the timer set for 10 ms fires 295 ms late
    expect(sends.slice(1)).toEqual(Array.from({ length: 30 }, (_, i) => ({ due: (i + 1) * 10, at: 305 })));
    for (let at = 310; !done; at += 10) {
      clock.fireAt(at);
      await Promise.resolve();
    }
    expect(sends.map((send) => send.due)).toEqual(Array.from({ length: 100 }, (_, i) => i * 10));
    for (const send of sends) expect(send.at).toBeGreaterThanOrEqual(send.due);
    expect(sends.filter((send) => send.at > send.due)).toHaveLength(30);
  });
});

/** A clock whose timers fire only when the test says, at the time it says (a starved process fires them late). */
class StarvedClock {
  private time = 0;
  private pending: Array<() => void> = [];

  now(): number {
    return this.time;
  }

  timer(_ms: number, fire: () => void): { cancel(): void } {
    this.pending.push(fire);
    return { cancel: () => (this.pending = this.pending.filter((other) => other !== fire)) };
  }

  fireAt(time: number): void {
    this.time = time;
    for (const fire of this.pending.splice(0)) fire();
  }
}

/**
 * The generator over real sockets, loosely: every request answered and counted, the statuses told
 * apart, the accounts in turn. Nothing here depends on how fast the machine is.
 */
describe('load generator at a fixed rate, over real sockets', () => {
  let server: Awaited<ReturnType<typeof recordingServer>>;

  afterEach(async () => {
    await server.close();
  });

  it('sends every request, counts every answer and the failed ones, the accounts in turn', async () => {
    server = await recordingServer((index) => ({ status: index % 2 === 0 ? 204 : 503, afterMs: 0 }));
    const figures = await paced({ url: server.url, method: 'POST', body: '{}', authorizations: ['Bearer a', 'Bearer b'], connections: 20, durationSeconds: 1, overallRate: 100 });
    expect(figures).toMatchObject({ requests: 100, non2xx: 50, errors: 0 });
    expect(figures.requestsPerSecond).toBeLessThanOrEqual(100);
    expect(server.arrivals).toHaveLength(100);
    // In turn (requests on different connections may arrive a little out of order, so counted, not listed).
    expect(server.authorizations.filter((header) => header === 'Bearer a')).toHaveLength(50);
    expect(server.authorizations.filter((header) => header === 'Bearer b')).toHaveLength(50);
  });

  it('scores a server answering slower than the rate under the rate, though it answers every request in the end', async () => {
    server = await recordingServer(() => ({ status: 204, afterMs: 40 })); // 2 connections: at most 50 answers a second
    const figures = await paced({ url: server.url, connections: 2, durationSeconds: 1, overallRate: 200 });
    expect(figures.requests).toBe(200);
    expect(figures.requestsPerSecond).toBeLessThan(100);
    expect(figures.p99).toBeGreaterThan(1000); // the queue for a connection counts
  });
});
