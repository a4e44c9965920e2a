/**
 * The console's refusals of a request, before anything is read or sent: a missing or wrong token
 * (401), a request from another host or origin or without a valid CSRF token (403). Rendered as
 * an escaped error page by the app's error handler.
 */

/** Why the console refused a request. Stable: never renamed. */
export const CONSOLE_REFUSALS = {
  /** No console token in the request (the cookie, or `Authorization: Bearer`). */
  TOKEN_REQUIRED: 'TOKEN_REQUIRED',
  /** A request carrying the token in its URL (`?token=`): refused, never a login (a URL stays in the browser's history). */
  TOKEN_IN_URL: 'TOKEN_IN_URL',
  /** A one-time login link that was used already, or was never issued by this console. */
  LOGIN_LINK_USED: 'LOGIN_LINK_USED',
  /** A console token that is not this console's. */
  TOKEN_INVALID: 'TOKEN_INVALID',
  /** The Host header names a host this console does not serve (DNS rebinding). */
  HOST_NOT_ALLOWED: 'HOST_NOT_ALLOWED',
  /** A POST whose Origin header is missing or is not this console's origin (cross-site request). */
  ORIGIN_NOT_ALLOWED: 'ORIGIN_NOT_ALLOWED',
  /** A form without this browser's CSRF token (or with a wrong one). */
  CSRF_TOKEN_INVALID: 'CSRF_TOKEN_INVALID',
  /** A decision without the identity header the trusted proxy must set (`identityHeader`), or with one that names no one acceptably. */
  IDENTITY_REQUIRED: 'IDENTITY_REQUIRED',
} as const;
export type ConsoleRefusal = (typeof CONSOLE_REFUSALS)[keyof typeof CONSOLE_REFUSALS];

/** A refused request: `statusCode` is what the client receives, `code` says why (see {@link CONSOLE_REFUSALS}). */
export class ConsoleHttpError extends Error {
  override readonly name = 'ConsoleHttpError';

  constructor(
    readonly statusCode: 401 | 403,
    readonly code: ConsoleRefusal,
    message: string,
  ) {
    super(`${code}: ${message}`);
  }
}
