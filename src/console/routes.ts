/**
 * The console's routes: GET / lists the runs waiting for a person; POST /approve, /reject and
 * /resolve send the run's own validated update with what the page showed (a reject or resolve
 * only after the call is seen waiting with the intent the page showed), each behind the CSRF
 * check; GET /console.css is the stylesheet. A refusal is thrown and rendered by the app's error
 * handler (see app.ts).
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { parseApproveForm, parseRejectForm, parseResolveForm } from './forms';
import type { ConsoleOperations } from './operations';
import { STYLESHEET, STYLESHEET_PATH } from './page';
import { renderApprovalDecision, renderResolution } from './render-outcome';
import { renderWaitingRunsPage } from './render-runs';

/** What the routes need. */
export interface RouteOptions {
  readonly operations: ConsoleOperations;
  /** Shown in the page header. */
  readonly namespace: string;
  /** Clock for expiries shown as "in 14 min", ms since the epoch. @default Date.now */
  readonly nowMs?: () => number;
}

/** Registers the routes on `app` (which has @fastify/csrf-protection registered). */
export function registerConsoleRoutes(app: FastifyInstance, options: RouteOptions): void {
  const { operations, namespace } = options;
  const nowMs = options.nowMs ?? Date.now;
  const sendHtml = (reply: FastifyReply, page: string) => reply.type('text/html; charset=utf-8').send(page);
  const guarded = { preHandler: app.csrfProtection };

  app.get('/', async (_request, reply) => {
    const runs = await operations.listWaitingRuns();
    return sendHtml(reply, renderWaitingRunsPage(runs, namespace, { csrfToken: reply.generateCsrf() }, nowMs()));
  });

  app.get(STYLESHEET_PATH, async (_request, reply) => reply.type('text/css; charset=utf-8').send(STYLESHEET));

  app.post('/approve', guarded, async (request, reply) => {
    const { workflowId, request: approval } = parseApproveForm(request.body);
    return sendHtml(reply, renderApprovalDecision(workflowId, await operations.approveCall(workflowId, approval)));
  });

  app.post('/reject', guarded, async (request, reply) => {
    const { workflowId, request: rejection, shownIntentDigest } = parseRejectForm(request.body);
    return sendHtml(reply, renderApprovalDecision(workflowId, await operations.rejectCall(workflowId, rejection, { intentDigest: shownIntentDigest })));
  });

  app.post('/resolve', guarded, async (request, reply) => {
    const { workflowId, request: resolution, shownIntentDigest } = parseResolveForm(request.body);
    return sendHtml(reply, renderResolution(workflowId, await operations.resolveCall(workflowId, resolution, { intentDigest: shownIntentDigest })));
  });
}
