/**
 * Logging a browser in without the console token ever being part of a URL that stays (a URL goes
 * into the browser's history, and a history entry with the token would log in again):
 * - a one-time login link, `/login?once=<code>`: `ttc console` prints one; the code (32 random
 *   bytes, unrelated to the token) logs in once, then it is spent: the history keeps a dead link;
 * - the login form at `/login`, which POSTs the token (Origin and CSRF checked like every form).
 * Both set the token cookie (HttpOnly, SameSite=Strict) and redirect to `/`. Codes live in this
 * process's memory only: a restarted console prints a new link.
 */
import { createHash, randomBytes } from 'node:crypto';
import { html } from './html';
import { renderPage } from './page';

/** Path of the login form and of one-time login links. */
export const LOGIN_PATH = '/login';
/** Query parameter of a one-time login link. */
export const LOGIN_LINK_PARAMETER = 'once';
/** Random bytes in a login link's code (base64url: 43 characters). */
const LOGIN_CODE_BYTES = 32;

/** The one-time login codes of a console: each logs in once. */
export class LoginLinks {
  /** SHA-256 of the codes not used yet (the codes themselves are not kept). */
  readonly #unused = new Set<string>();

  /** A new code that logs in once (base64url, 43 characters). */
  issue(): string {
    const code = randomBytes(LOGIN_CODE_BYTES).toString('base64url');
    this.#unused.add(digest(code));
    return code;
  }

  /** True, once, for a code {@link issue} returned; false for a used or unknown code. */
  redeem(code: string): boolean {
    return this.#unused.delete(digest(code));
  }
}

function digest(code: string): string {
  return createHash('sha256').update(code, 'utf8').digest('hex');
}

/** The login form page: the token in a password field, POSTed with this browser's CSRF token. */
export function renderLoginPage(csrfToken: string): string {
  return renderPage(
    'Log in to the console',
    'open the login link `ttc console` printed, or enter the console token',
    html`<form method="post" action="${LOGIN_PATH}" class="login"><input type="hidden" name="_csrf" value="${csrfToken}"><label>Console token <input type="password" name="token" required autocomplete="current-password"></label><button type="submit" class="approve">Log in</button></form>
<p class="note">A login link works once; for another browser use this form with the token (TTC_CONSOLE_TOKEN, or the one \`ttc console\` printed).</p>`,
  );
}
