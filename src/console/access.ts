/**
 * Who may use the console: every request must carry the console token, and every request that
 * changes something must come from the console's own page. In order, on every request:
 * 1. the Host header must name this console (loopback names and the bound host, with the port),
 *    so a DNS-rebound site cannot talk to it;
 * 2. the token: `?token=` on a GET (then stored in an HttpOnly, SameSite=Strict cookie and the
 *    browser is redirected to the same URL without it, so it leaves the address bar and history;
 *    the redirect is always a path on this console, see {@link sameOriginPath}),
 *    else `Authorization: Bearer <token>`, else the cookie; compared in constant time;
 * 3. on anything but GET / HEAD, the Origin header must be present and equal this console's
 *    origin (`http://<Host>`).
 * The CSRF token of every form is checked afterwards, per route (@fastify/csrf-protection).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_REFUSALS, ConsoleHttpError } from './http-error';
import { tokensEqual } from './token';

/** The cookie holding the console token after `?token=` was accepted. */
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
 * @throws {@link ConsoleHttpError} 403 HOST_NOT_ALLOWED, 401 TOKEN_REQUIRED / TOKEN_INVALID,
 *   403 ORIGIN_NOT_ALLOWED, as described in the module docstring.
 */
export function accessGuard(policy: AccessPolicy) {
  return async function guard(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const host = (request.headers.host ?? '').toLowerCase();
    if (policy.allowedHosts !== 'any' && !policy.allowedHosts.has(host)) {
      throw new ConsoleHttpError(403, CONSOLE_REFUSALS.HOST_NOT_ALLOWED, `this console does not serve host ${JSON.stringify(host)}; open the URL it printed`);
    }
    const reading = request.method === 'GET' || request.method === 'HEAD';
    const url = new URL(request.url, 'http://console.invalid');
    const fromQuery = reading ? url.searchParams.get('token') : null;
    const bearer = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? null;
    const presented = fromQuery ?? bearer ?? request.cookies[TOKEN_COOKIE] ?? null;
    if (presented === null || presented === '') {
      throw new ConsoleHttpError(401, CONSOLE_REFUSALS.TOKEN_REQUIRED, 'no console token; open the URL `ttc console` printed (with ?token=…) or send Authorization: Bearer <token>');
    }
    if (!tokensEqual(presented, policy.token)) {
      throw new ConsoleHttpError(401, CONSOLE_REFUSALS.TOKEN_INVALID, 'wrong console token; open the URL the running `ttc console` printed');
    }
    if (fromQuery !== null) {
      url.searchParams.delete('token');
      reply.setCookie(TOKEN_COOKIE, presented, { httpOnly: true, sameSite: 'strict', path: '/' });
      // Returning the reply from an async hook ends the request here (Fastify hooks).
      return reply.redirect(sameOriginPath(url), 303);
    }
    if (!reading) {
      const origin = request.headers.origin;
      if (origin !== `http://${host}`) {
        throw new ConsoleHttpError(403, CONSOLE_REFUSALS.ORIGIN_NOT_ALLOWED, `${request.method} from origin ${origin === undefined ? '(none)' : JSON.stringify(origin)}; only this console's own page (http://${host}) may send it`);
      }
    }
    return undefined;
  };
}

/**
 * `url`'s path and query as a redirect target that stays on this console: the path with its
 * leading slashes and backslashes collapsed to one `/`. A target starting with `//` or `/\` is a
 * network-path reference (browsers go to that host), and `/.//evil.example/` normalises to exactly
 * that. Pure.
 */
export function sameOriginPath(url: URL): string {
  return `/${url.pathname.replace(/^[/\\]+/, '')}${url.search}`;
}
