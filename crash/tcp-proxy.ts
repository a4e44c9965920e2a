/**
 * A loopback TCP proxy the harness puts between one worker and the Temporal server, so that a
 * stalled worker can also be cut off: `cut()` drops every connection and refuses new ones
 * (the server then cancels the worker's outstanding polls instead of handing it tasks it
 * cannot run); `restore()` lets it reconnect.
 */
import { createServer, connect, type Socket } from 'node:net';

export interface TcpProxy {
  /** `127.0.0.1:<port>` to hand to the worker as TEMPORAL_ADDRESS. */
  readonly address: string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

/** Starts a proxy to `target` (`host:port`) on a free loopback port. */
export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<Socket>();
  let open = true;
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = createServer((client) => {
    track(client);
    if (!open) {
      client.destroy();
      return;
    }
    const upstream = connect({ host, port });
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((done, fail) => {
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => done());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the proxy has no TCP address');
  return {
    address: `127.0.0.1:${address.port}`,
    cut() {
      open = false;
      for (const socket of sockets) socket.destroy();
    },
    restore() {
      open = true;
    },
    close: () =>
      new Promise<void>((done) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => done());
      }),
  };
}
