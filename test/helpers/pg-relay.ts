/**
 * A TCP relay between a store and a PostgreSQL server, for losing a connection at a chosen
 * statement: `inspect` sees each client→server chunk and forwards it, holds it, kills the
 * connection without forwarding it (`kill`: the server never sees it), or forwards it and then
 * cuts the client side (`cut-after`: the server side stays open and finishes what it received).
 * And `holdAnswers` keeps what the server sends until `releaseAnswers` writes it all in one
 * callback (every held connection readable in the store's next poll).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

/** What the relay does with one client→server chunk. */
export type RelayVerdict = 'forward' | 'cut-after' | 'kill' | { hold: Promise<void> };

/** A TCP relay to PostgreSQL at `host:upstreamPort`; listen with {@link start}, then connect to 127.0.0.1:{@link port}. */
export class PgRelay {
  readonly sockets = new Set<Socket>();
  private server!: Server;
  port = 0;
  inspect: (chunk: Buffer) => RelayVerdict = () => 'forward';
  /** Server→client chunks held per connection, or null while answers flow. */
  private held: Map<Socket, Buffer[]> | null = null;

  constructor(
    private readonly host: string,
    private readonly upstreamPort: number,
  ) {}

  /** A relay to the server of `url`, started. */
  static async to(url: string): Promise<PgRelay> {
    const u = new URL(url);
    const relay = new PgRelay(u.hostname, Number(u.port || 5432));
    await relay.start();
    return relay;
  }

  /** `url` pointed at this relay. */
  through(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Keeps every server→client chunk from now on until {@link releaseAnswers}. */
  holdAnswers(): void {
    this.held = new Map();
  }

  /** Connections with a held answer. */
  heldConnections(): number {
    return this.held?.size ?? 0;
  }

  /** Writes every held answer to its client, in one callback, and lets answers flow again. */
  releaseAnswers(): void {
    const held = this.held ?? new Map<Socket, Buffer[]>();
    this.held = null;
    for (const [client, chunks] of held) if (!client.destroyed) client.write(Buffer.concat(chunks));
  }

  async start(): Promise<void> {
    this.server = createServer((client) => this.pipe(client));
    await new Promise<void>((done) => this.server.listen(0, '127.0.0.1', done));
    this.port = (this.server.address() as { port: number }).port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((done) => this.server.close(() => done()));
  }

  private pipe(client: Socket): void {
    const upstream = connect(this.upstreamPort, this.host);
    this.sockets.add(client);
    this.sockets.add(upstream);
    let cut = false;
    let chain = Promise.resolve();
    upstream.on('data', (data) => {
      if (this.held !== null) this.held.set(client, [...(this.held.get(client) ?? []), data]);
      else if (!cut && !client.destroyed) client.write(data);
    });
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
    client.on('close', () => {
      // A cut connection keeps its server side open: the server finishes what it received.
      if (!cut) upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
    client.on('data', (chunk) => {
      chain = chain.then(async () => {
        if (cut) {
          upstream.write(chunk);
          return;
        }
        const verdict = this.inspect(chunk);
        if (verdict === 'kill') {
          client.destroy();
          upstream.destroy();
          return;
        }
        if (typeof verdict === 'object') await verdict.hold;
        upstream.write(chunk);
        if (verdict === 'cut-after') {
          cut = true;
          // The rest of the flight (Bind/Execute/Sync may come in later chunks) still reaches the server.
          setTimeout(() => client.destroy(), 100);
        }
      });
    });
  }
}
