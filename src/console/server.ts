/**
 * The approval console: a small server-rendered web page where people in the loop
 * approve or reject calls awaiting approval and resolve calls paused on an unknown outcome,
 * sending the same validated updates as the command line (src/operator). Safe by default: it
 * listens on 127.0.0.1, every request needs the console token, every form a CSRF token and the
 * console's own origin, and every value shown is escaped. See docs/console.md.
 */
import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildConsoleApp, type ConsoleAppOptions } from './app';
import { LOGIN_LINK_PARAMETER, LOGIN_PATH, LoginLinks } from './login';

import { DEFAULT_CONSOLE_HOST, DEFAULT_CONSOLE_PORT } from './defaults';

export { DEFAULT_CONSOLE_HOST, DEFAULT_CONSOLE_PORT };

/** Options of {@link startConsoleServer}. */
export interface ConsoleServerOptions extends Omit<ConsoleAppOptions, 'allowedHosts' | 'loginLinks'> {
  /** Interface to listen on. @default {@link DEFAULT_CONSOLE_HOST} */
  readonly host?: string;
  /** TCP port; 0 picks a free one. @default {@link DEFAULT_CONSOLE_PORT} */
  readonly port?: number;
}

/** A listening console. */
export interface RunningConsole {
  /** Its base URL, e.g. `http://127.0.0.1:8787/` (without the token). */
  readonly url: string;
  /** A one-time login link (`<url>login?once=<code>`): logs one browser in, once; never carries the token. */
  readonly loginUrl: string;
  /** The login form (`<url>login`), where a browser logs in with the token. */
  readonly loginFormUrl: string;
  /** Issues another one-time login link. */
  issueLoginUrl(): string;
  /** False when it listens on an interface other than loopback (people on the network can reach it). */
  readonly loopbackOnly: boolean;
  readonly app: FastifyInstance;
  close(): Promise<void>;
}

/**
 * Starts the console and listens.
 *
 * @throws the listen error (EADDRINUSE names the port) when it cannot listen.
 */
export async function startConsoleServer(options: ConsoleServerOptions): Promise<RunningConsole> {
  const host = options.host ?? DEFAULT_CONSOLE_HOST;
  // The Host header is checked against the bound port, known only after listening.
  const hosts = new Set<string>();
  const loginLinks = new LoginLinks();
  const app = await buildConsoleApp({ ...options, allowedHosts: isWildcardHost(host) ? 'any' : hosts, loginLinks });
  await app.listen({ host, port: options.port ?? DEFAULT_CONSOLE_PORT });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : (options.port ?? DEFAULT_CONSOLE_PORT);
  for (const name of ['127.0.0.1', 'localhost', '[::1]', urlHost(host)]) hosts.add(`${name.toLowerCase()}:${port}`);
  const url = `http://${urlHost(isWildcardHost(host) ? DEFAULT_CONSOLE_HOST : host)}:${port}/`;
  const issueLoginUrl = () => `${url}${LOGIN_PATH.slice(1)}?${LOGIN_LINK_PARAMETER}=${loginLinks.issue()}`;
  return {
    url,
    loginUrl: issueLoginUrl(),
    loginFormUrl: `${url}${LOGIN_PATH.slice(1)}`,
    issueLoginUrl,
    loopbackOnly: isLoopbackHost(host),
    app,
    close: () => app.close(),
  };
}

/** True for 127.0.0.0/8, ::1 and `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || (isIP(bare) === 4 && bare.startsWith('127.'));
}

function isWildcardHost(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '[::]' || host === '';
}

/** The host as it appears in a URL and a Host header (IPv6 in brackets). */
function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}
