import { createServer, Server, Socket, connect } from 'node:net';

/** A TCP proxy on 127.0.0.1 in front of a real server, which a test can cut to simulate an outage. */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {}

  async start(port = 0): Promise<number> {
    this.server = createServer((client) => {
      const upstream = connect(this.targetPort, this.targetHost);
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    this.port = (this.server.address() as { port: number }).port;
    return this.port;
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
}

/** DATABASE_URL rewritten to go through a proxy. */
export async function proxiedDatabaseUrl(url: string): Promise<{ url: string; proxy: TcpProxy }> {
  const parsed = new URL(url);
  const proxy = new TcpProxy(parsed.hostname, Number(parsed.port || 5432));
  parsed.port = String(await proxy.start());
  parsed.hostname = '127.0.0.1';
  return { url: parsed.toString(), proxy };
}
