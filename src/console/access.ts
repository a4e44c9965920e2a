/**
 * Who may use the console: every request must carry the console token, and every request that
 * changes something must come from the console's own page. In order, on every request:
 * 1. the Host header must name this console (loopback names and the bound host, with the port),
 *    so a DNS-rebound site cannot talk to it;
 * 2. a URL carrying `token` in its query is refused (401 TOKEN_IN_URL): a URL stays in the
 *    browser's history, so the token never logs in from one (see login.ts);
 * 3. on anything but GET / HEAD, the Origin header must be present and equal this console's
 *    origin (`http://<Host>`);
 * 4. the token: `Authorization: Bearer <token>`, else the cookie set at login; compared in
 *    constant time. Not asked on the login page (`GET /login`, a one-time link
 *    `GET /login?once=…`, the form's `POST /login`, see routes.ts) and the stylesheet.
 * The CSRF token of every form is checked afterwards, per route (@fastify/csrf-protection).
 */
import type { FastifyRequest } from 'fastify';
import { CONSOLE_REFUSALS, ConsoleHttpError } from './http-error';
import { LOGIN_PATH } from './login';
import { STYLESHEET_PATH } from './page';
import { tokensEqual } from './token';

/** The cookie holding the console token after a login (a one-time link or the login form). */
export const TOKEN_COOKIE = 'ttc_console_token';

/** What the guard checks against. */
export interface AccessPolicy {
  readonly token: string;
  /** Host header values (`host:port`, lowercase) this console answers to; `any` when it listens on every interface. */
  readonly allowedHosts: ReadonlySet<string> | 'any';
}

/**
 * The `onRequest` hook enforcing {@link AccessPolicy} (register it after @fastify/cookie).
 *
 * @throws {@link ConsoleHttpError} 403 HOST_NOT_ALLOWED, 401 TOKEN_IN_URL, 403 ORIGIN_NOT_ALLOWED,
 *   401 TOKEN_REQUIRED / TOKEN_INVALID, as described in the module docstring.
 */
export function accessGuard(policy: AccessPolicy) {
  return async function guard(request: FastifyRequest): Promise<void> {
    const host = (request.headers.host ?? '').toLowerCase();
    if (policy.allowedHosts !== 'any' && !policy.allowedHosts.has(host)) {
      throw new ConsoleHttpError(403, CONSOLE_REFUSALS.HOST_NOT_ALLOWED, `this console does not serve host ${JSON.stringify(host)}; open the URL it printed`);
    }
    const url = new URL(request.url, 'http://console.invalid');
    if (url.searchParams.has('token')) {
      throw new ConsoleHttpError(
        401,
        CONSOLE_REFUSALS.TOKEN_IN_URL,
        `the console does not take its token in a URL (it would stay in the browser's history); open the one-time login link \`ttc console\` printed, or log in at ${LOGIN_PATH}`,
      );
    }
    const reading = request.method === 'GET' || request.method === 'HEAD';
    if (!reading) {
      const origin = request.headers.origin;
      if (origin !== `http://${host}`) {
        throw new ConsoleHttpError(
          403,
          CONSOLE_REFUSALS.ORIGIN_NOT_ALLOWED,
          `${request.method} from origin ${origin === undefined ? '(none)' : JSON.stringify(origin)}; only this console's own page (http://${host}) may send it`,
        );
      }
    }
    if (url.pathname === LOGIN_PATH || (reading && url.pathname === STYLESHEET_PATH)) return;
    const bearer = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? null;
    const presented = bearer ?? request.cookies[TOKEN_COOKIE] ?? null;
    if (presented === null || presented === '') {
      throw new ConsoleHttpError(
        401,
        CONSOLE_REFUSALS.TOKEN_REQUIRED,
        `no console token; open the one-time login link \`ttc console\` printed, log in at ${LOGIN_PATH}, or send Authorization: Bearer <token>`,
      );
    }
    if (!tokensEqual(presented, policy.token)) {
      throw new ConsoleHttpError(401, CONSOLE_REFUSALS.TOKEN_INVALID, `wrong console token; log in again at ${LOGIN_PATH} with the running console's token`);
    }
  };
}
