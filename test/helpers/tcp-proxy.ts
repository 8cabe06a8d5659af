import { createServer, Server, Socket, connect } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of a real server, which a test can cut to simulate an outage,
 * reset (every connection dropped, the next ones accepted), make lose the server's replies, hold them
 * until the test releases them, or blackhole (connections accepted, nothing forwarded either way, no
 * answer ever).
 */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  /** Each client socket's connection to the server. */
  private readonly pairs = new Map<Socket, Socket>();
  private refusing = false;
  private blackholed = false;
  private holding = false;
  port = 0;
  /** Connections dropped by `reset` so far. */
  resets = 0;
  /** Connections clients opened to the proxy so far. */
  accepted = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = 0): Promise<number> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
  }

  private accept(client: Socket): void {
    this.accepted++;
    this.track(client);
    if (this.refusing) {
      client.resetAndDestroy();
      return;
    }
    if (this.blackholed) {
      client.on('data', () => undefined); // swallowed: no connection is made, nothing answers
      return;
    }
    const upstream = connect(this.targetPort, this.targetHost);
    this.track(upstream);
    // Piped (cheap, with back-pressure) until a fault needs to drop what passes: see loseReplies, blackhole.
    client.pipe(upstream);
    if (!this.holding) upstream.pipe(client);
    this.pairs.set(client, upstream);
    client.on('close', () => {
      this.pairs.delete(client);
      upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
  }

  /** Drops every open connection and refuses new ones. */
  async cut(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server = undefined;
  }

  async restore(): Promise<void> {
    await this.start(this.port);
  }

  /**
   * Resets (TCP RST) every open connection, as a failover or a NAT losing its table would; new
   * connections are reset too for `refuseForMs`, then accepted again.
   */
  reset(refuseForMs = 0): void {
    for (const socket of this.sockets) {
      this.resets++;
      socket.resetAndDestroy();
    }
    if (refuseForMs > 0) {
      this.refusing = true;
      setTimeout(() => (this.refusing = false), refuseForMs);
    }
  }

  /** New connections are reset until `acceptNew` (the open ones are left as they are). */
  refuseNew(): void {
    this.refusing = true;
  }

  acceptNew(): void {
    this.refusing = false;
  }

  /** From now on, what the server sends on the connections open now is lost (what they send still reaches it). */
  loseReplies(): void {
    for (const [, upstream] of this.pairs) {
      upstream.unpipe();
      upstream.on('data', () => undefined);
    }
  }

  /**
   * From now on the server's replies wait in the proxy (requests still reach the server), on the open
   * connections and new ones, until `release`: a server that answers exactly when the test says.
   */
  hold(): void {
    this.holding = true;
    for (const [client, upstream] of this.pairs) upstream.unpipe(client);
  }

  /** Forwards what `hold` kept, and everything after it. */
  release(): void {
    this.holding = false;
    for (const [client, upstream] of this.pairs) upstream.pipe(client);
  }

  /** Nothing forwarded either way, on the open connections and new ones, until `unblackhole`. */
  blackhole(): void {
    this.blackholed = true;
    for (const [client, upstream] of this.pairs) {
      client.unpipe();
      upstream.unpipe();
      client.on('data', () => undefined);
      upstream.on('data', () => undefined);
    }
  }

  unblackhole(): void {
    this.blackholed = false;
    for (const socket of this.sockets) socket.destroy();
  }
}

/** DATABASE_URL rewritten to go through a proxy. */
export async function proxiedDatabaseUrl(url: string): Promise<{ url: string; proxy: TcpProxy }> {
  const parsed = new URL(url);
  const proxy = new TcpProxy(parsed.hostname, Number(parsed.port || 5432));
  parsed.port = String(await proxy.start());
  parsed.hostname = '127.0.0.1';
  return { url: parsed.toString(), proxy };
}
