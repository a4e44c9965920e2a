/**
 * The console's routes: GET / lists the runs waiting for a person; POST /approve, /reject and
 * /resolve send the run's own validated update with what the page showed (a reject or resolve
 * only after the call is seen waiting with the intent the page showed), each behind the CSRF
 * check; GET /console.css is the stylesheet; GET /login is the login form (or, with `?once=`, a
 * one-time login link) and POST /login its submission (see login.ts). A refusal is thrown and
 * rendered by the app's error handler (see app.ts).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { deciderNameRefusal } from '../checkpoint/visible-text';
import { TOKEN_COOKIE } from './access';
import { parseApproveForm, parseRejectForm, parseResolveForm } from './forms';
import { CONSOLE_REFUSALS, ConsoleHttpError } from './http-error';
import { LOGIN_LINK_PARAMETER, LOGIN_PATH, renderLoginPage, type LoginLinks } from './login';
import type { ConsoleOperations } from './operations';
import { STYLESHEET, STYLESHEET_PATH } from './page';
import { renderApprovalDecision, renderResolution } from './render-outcome';
import { renderWaitingRunsPage } from './render-runs';
import { tokensEqual } from './token';

/** What the routes need. */
export interface RouteOptions {
  readonly operations: ConsoleOperations;
  /** Shown in the page header. */
  readonly namespace: string;
  /** Clock for expiries shown as "in 14 min", ms since the epoch. @default Date.now */
  readonly nowMs?: () => number;
  /** The console token: the login form's POST must carry it; a login sets it as the cookie. */
  readonly token: string;
  /** The one-time login links this console issued. */
  readonly loginLinks: LoginLinks;
  /** Who the decisions name (see `DeciderIdentity` in ./app). */
  readonly decider?: { readonly operator?: string; readonly identityHeader?: string };
}

/** Registers the routes on `app` (which has @fastify/csrf-protection registered). */
export function registerConsoleRoutes(app: FastifyInstance, options: RouteOptions): void {
  /**
   * `{ by }` for a decision: the trusted proxy's header when one is configured, else the configured
   * operator name. The header must come once (Node joins repeats into `a, b`), as UTF-8 (Node reads
   * header bytes as Latin-1), and name someone (`deciderNameRefusal`); else 403 IDENTITY_REQUIRED.
   */
  const decidedBy = (rawHeaders: readonly string[]): { by?: string } => {
    const header = options.decider?.identityHeader;
    if (header === undefined) return options.decider?.operator === undefined ? {} : { by: options.decider.operator };
    const refuse = (why: string) => new ConsoleHttpError(403, CONSOLE_REFUSALS.IDENTITY_REQUIRED, `${why} (set by the proxy in front of this console); nothing was sent`);
    const values = rawHeaders.filter((_, i) => i % 2 === 1 && rawHeaders[i - 1]!.toLowerCase() === header.toLowerCase());
    if (values.length === 0) throw refuse(`the decision carries no ${header} header naming who decides`);
    if (values.length > 1) throw refuse(`the decision carries the ${header} header ${values.length} times; it must name one person`);
    const bytes = Buffer.from(values[0]!, 'latin1');
    const by = bytes.toString('utf8');
    if (!Buffer.from(by, 'utf8').equals(bytes)) throw refuse(`the ${header} header is not UTF-8 text`);
    const refusal = deciderNameRefusal(by.trim());
    if (refusal !== null) throw refuse(`the ${header} header names no one acceptably: ${refusal}`);
    return { by: by.trim() };
  };
  const { operations, namespace } = options;
  const nowMs = options.nowMs ?? Date.now;
  const sendHtml = (reply: FastifyReply, page: string) => reply.type('text/html; charset=utf-8').send(page);
  const guarded = { preHandler: app.csrfProtection };
  /** Logs the browser in: the token in the HttpOnly cookie, then the list (a fixed path: nothing from the request). */
  const logIn = (reply: FastifyReply) => {
    reply.setCookie(TOKEN_COOKIE, options.token, { httpOnly: true, sameSite: 'strict', path: '/' });
    return reply.redirect('/', 303);
  };

  app.get(LOGIN_PATH, async (request, reply) => {
    const code = (request.query as Record<string, unknown>)[LOGIN_LINK_PARAMETER];
    // Only a GET spends a link: a HEAD (a link preview, a prefetch check) sees the form.
    if (code === undefined || request.method !== 'GET') return sendHtml(reply, renderLoginPage(reply.generateCsrf()));
    if (typeof code !== 'string' || !options.loginLinks.redeem(code)) {
      throw new ConsoleHttpError(
        401,
        CONSOLE_REFUSALS.LOGIN_LINK_USED,
        `this login link was used already or was not issued by this console (a link logs in once); log in at ${LOGIN_PATH} with the console token`,
      );
    }
    return logIn(reply);
  });

  app.post(LOGIN_PATH, guarded, async (request, reply) => {
    const token = (request.body as { token?: unknown } | undefined)?.token;
    if (typeof token !== 'string' || token === '') throw new ConsoleHttpError(401, CONSOLE_REFUSALS.TOKEN_REQUIRED, 'the login form carries no console token');
    if (!tokensEqual(token, options.token)) throw new ConsoleHttpError(401, CONSOLE_REFUSALS.TOKEN_INVALID, "wrong console token; enter the running console's token");
    return logIn(reply);
  });

  app.get('/', async (_request, reply) => {
    const runs = await operations.listWaitingRuns();
    return sendHtml(reply, renderWaitingRunsPage(runs, namespace, { csrfToken: reply.generateCsrf() }, nowMs()));
  });

  app.get(STYLESHEET_PATH, async (_request, reply) => reply.type('text/css; charset=utf-8').send(STYLESHEET));

  app.post('/approve', guarded, async (request, reply) => {
    const { workflowId, request: approval } = parseApproveForm(request.body);
    return sendHtml(reply, renderApprovalDecision(workflowId, await operations.approveCall(workflowId, { ...approval, ...decidedBy(request.raw.rawHeaders) })));
  });

  app.post('/reject', guarded, async (request, reply) => {
    const { workflowId, request: rejection, shownIntentDigest } = parseRejectForm(request.body);
    return sendHtml(
      reply,
      renderApprovalDecision(workflowId, await operations.rejectCall(workflowId, { ...rejection, ...decidedBy(request.raw.rawHeaders) }, { intentDigest: shownIntentDigest })),
    );
  });

  app.post('/resolve', guarded, async (request, reply) => {
    const { workflowId, request: resolution, shownIntentDigest } = parseResolveForm(request.body);
    return sendHtml(
      reply,
      renderResolution(workflowId, await operations.resolveCall(workflowId, { ...resolution, ...decidedBy(request.raw.rawHeaders) }, { intentDigest: shownIntentDigest })),
    );
  });
}
