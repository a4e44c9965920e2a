/** Free loopback TCP ports, for servers the tests and benchmarks start. */
import { createServer } from 'node:net';

/** A free loopback TCP port (released before it is returned, so it can be taken before a server binds it: see {@link onFreePort}). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

const PORT_TAKEN = /address already in use|EADDRINUSE/i;
const ATTEMPTS = 3;

/**
 * Starts a server with `start` on a free port, and again on another one when the port was taken
 * before the server bound it (another process's outgoing connection can get it as its local port):
 * `start` threw, or `outputOf` its result says, "address already in use". Up to three attempts
 * (numbered from 1); the last one's result or error is the answer.
 */
export async function onFreePort<T>(start: (port: number, attempt: number) => Promise<T>, outputOf: (result: T) => string = () => ''): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      const result = await start(await freePort(), attempt);
      if (attempt < ATTEMPTS && PORT_TAKEN.test(outputOf(result))) continue;
      return result;
    } catch (error) {
      if (attempt >= ATTEMPTS || !PORT_TAKEN.test(String(error))) throw error;
    }
  }
}
