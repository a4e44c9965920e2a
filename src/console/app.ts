/**
 * The console as a Fastify app, not listening (tests use `app.inject`; server.ts listens). Every
 * request passes, in order: the security headers, the cookie parser, the access guard (host,
 * token, origin: access.ts), the form body parser, then per form route the CSRF check
 * (@fastify/csrf-protection, secret in an HttpOnly SameSite=Strict cookie, token in a hidden field).
 * Every refusal and failure is an escaped HTML page with a status code (see {@link describeFailure}).
 */
import fastifyCookie from '@fastify/cookie';
import fastifyCsrfProtection from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import { WorkflowNotFoundError } from '@temporalio/client';
import Fastify, { type FastifyInstance } from 'fastify';
import { CheckpointError, isCheckpointError } from '../checkpoint/errors';
import { deciderNameRefusal } from '../checkpoint/visible-text';
import { describeError } from '../cli/errors';
import { DecisionRefusedError } from '../operator/run-decisions';
import { accessGuard, type AccessPolicy } from './access';
import { ConsoleHttpError } from './http-error';
import { LoginLinks } from './login';
import type { ConsoleOperations } from './operations';
import { renderRefusal } from './render-outcome';
import { registerConsoleRoutes } from './routes';
import { setSecurityHeaders } from './security-headers';

/** The cookie holding this browser's CSRF secret. */
export const CSRF_COOKIE = 'ttc_console_csrf';
/** Largest request body, UTF-8 bytes (a resolution's result JSON is the largest field). */
export const CONSOLE_BODY_LIMIT_BYTES = 1_048_576;

/** What the app serves and whom. */
export interface ConsoleAppOptions extends AccessPolicy {
  readonly operations: ConsoleOperations;
  /** The Temporal namespace, shown in the page header. */
  readonly namespace: string;
  /** Clock for expiries, ms since the epoch. @default Date.now */
  readonly nowMs?: () => number;
  /** Called with every unexpected failure (a 500 page), e.g. to print it. @default ignore */
  readonly onError?: (error: unknown) => void;
  /** The one-time login links this console accepts (`/login?once=`). @default a new, empty set */
  readonly loginLinks?: LoginLinks;
  /** Who the console's decisions name (`by`): see {@link DeciderIdentity}. @default none named */
  readonly decider?: DeciderIdentity;
}

/**
 * Who takes the decisions sent from this console, kept with each decision (`by`):
 * - `identityHeader`: the name of a request header a trusted proxy in front of the console sets
 *   to the signed-in person (opt-in: never trusted unless configured); a decision without it, with
 *   it twice, not UTF-8 or naming no one (`deciderNameRefusal`) is refused (403 IDENTITY_REQUIRED)
 *   and nothing is sent;
 * - otherwise `operator`: the name the console was started with.
 */
export interface DeciderIdentity {
  readonly operator?: string;
  readonly identityHeader?: string;
}

/**
 * Builds the app (plugins, hooks, routes, error pages); call `listen` or `inject` on it.
 * @throws CheckpointError INVALID_ARGUMENT when `decider.operator` names no one (`deciderNameRefusal`)
 */
export async function buildConsoleApp(options: ConsoleAppOptions): Promise<FastifyInstance> {
  const operator = options.decider?.operator;
  const operatorRefusal = operator === undefined ? null : deciderNameRefusal(operator);
  if (operatorRefusal !== null) throw new CheckpointError('INVALID_ARGUMENT', `the console's operator: ${operatorRefusal}`, { field: 'operator' });
  const app = Fastify({ logger: false, bodyLimit: CONSOLE_BODY_LIMIT_BYTES, forceCloseConnections: true });
  app.addHook('onRequest', setSecurityHeaders);
  await app.register(fastifyCookie);
  app.addHook('onRequest', accessGuard(options));
  await app.register(fastifyFormbody);
  await app.register(fastifyCsrfProtection, {
    cookieKey: CSRF_COOKIE,
    cookieOpts: { httpOnly: true, sameSite: 'strict', path: '/' },
    // The hidden `_csrf` field only: a token in a URL would leak through history and logs.
    getToken: (request) => (request.body as { _csrf?: unknown } | undefined)?._csrf as string | undefined,
  });
  registerConsoleRoutes(app, {
    operations: options.operations,
    namespace: options.namespace,
    token: options.token,
    loginLinks: options.loginLinks ?? new LoginLinks(),
    ...(options.nowMs ? { nowMs: options.nowMs } : {}),
    ...(options.decider ? { decider: options.decider } : {}),
  });

  app.setNotFoundHandler(async (request, reply) =>
    reply
      .code(404)
      .type('text/html; charset=utf-8')
      .send(renderRefusal('Not found', 'NOT_FOUND', `no page ${request.method} ${request.url.split('?')[0]}`, 'The console has one page: the list of runs waiting for a person.')),
  );
  app.setErrorHandler(async (error, _request, reply) => {
    const failure = describeFailure(error);
    if (failure.statusCode === 500) options.onError?.(error);
    return reply
      .code(failure.statusCode)
      .type('text/html; charset=utf-8')
      .send(renderRefusal(failure.title, failure.code, failure.message, failure.hint));
  });
  return app;
}

/** A failure as the person reads it. */
export interface ConsoleFailure {
  readonly statusCode: number;
  readonly title: string;
  /** The refusal type: the run's (APPROVAL_MISMATCH, STALE_STATE_VERSION, …), the console's (TOKEN_REQUIRED, CSRF_TOKEN_INVALID, …), or the error's code. */
  readonly code: string;
  readonly message: string;
  readonly hint: string;
}

const NOTHING_SENT = 'Nothing was sent to the run and nothing ran.';
const CSRF_CODES = new Set(['FST_CSRF_MISSING_SECRET', 'FST_CSRF_INVALID_TOKEN']);

/**
 * Maps an error to its page: 401 / 403 for the access guard's and the CSRF check's refusals,
 * 409 for a run that refused the decision (with the workflow's refusal type), 400 for a malformed
 * form, 404 for an unknown run, the status of Fastify's own client errors (413, 415), else 500.
 */
export function describeFailure(error: unknown): ConsoleFailure {
  if (error instanceof ConsoleHttpError) {
    return {
      statusCode: error.statusCode,
      title: error.statusCode === 401 ? 'Console token required' : 'Request refused',
      code: error.code,
      message: error.message,
      hint: error.statusCode === 401 ? 'Open the one-time login link that `ttc console` printed, or log in at /login with the console token.' : NOTHING_SENT,
    };
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && CSRF_CODES.has(code)) {
    return {
      statusCode: 403,
      title: 'Request refused',
      code: 'CSRF_TOKEN_INVALID',
      message: 'CSRF_TOKEN_INVALID: the form carries no valid CSRF token for this browser',
      hint: `${NOTHING_SENT} Reload the list and decide again.`,
    };
  }
  if (error instanceof DecisionRefusedError) {
    return {
      statusCode: 409,
      title: 'The run refused the decision',
      code: error.type,
      message: error.message,
      hint: 'The run validates every decision against what it is doing now: nothing changed and nothing ran. Reload the list to see the run as it is now.',
    };
  }
  if (isCheckpointError(error, 'INVALID_ARGUMENT')) {
    return { statusCode: 400, title: 'Form refused', code: error.code, message: error.message, hint: NOTHING_SENT };
  }
  if (error instanceof WorkflowNotFoundError) {
    return { statusCode: 404, title: 'No such run', code: 'RUN_NOT_FOUND', message: error.message, hint: NOTHING_SENT };
  }
  const statusCode = (error as { statusCode?: unknown } | null)?.statusCode;
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500) {
    return {
      statusCode,
      title: 'Request refused',
      code: typeof code === 'string' ? code : `HTTP_${statusCode}`,
      message: error instanceof Error ? error.message : String(error),
      hint: NOTHING_SENT,
    };
  }
  return {
    statusCode: 500,
    title: 'Console error',
    code: 'CONSOLE_ERROR',
    message: describeError(error),
    hint: 'The console could not complete the request; whether an update reached the run is not known here: reload the list to see the run as it is now.',
  };
}
