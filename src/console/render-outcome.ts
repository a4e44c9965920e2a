/**
 * Pages answering a form or refusing a request: the decision as the run recorded it, the run's
 * refusal with its type (APPROVAL_MISMATCH, STALE_STATE_VERSION, …) and message, or why the
 * console refused the request. Every value is escaped. Pure.
 */
import type { ApprovalDecisionResult, ResolveOutcomeResult } from '../workflows/agent/types';
import { resolutionNextStep } from '../operator/run-decisions';
import { html } from './html';
import { renderPage } from './page';

/** The page after an approve or reject the run accepted. */
export function renderApprovalDecision(workflowId: string, result: ApprovalDecisionResult): string {
  const verb = result.decision === 'approved' ? 'Approved' : 'Rejected';
  const detail =
    result.decision === 'approved'
      ? html`It runs once a worker starts it, which must be before ${result.approvalExpiresAt}.`
      : html`Nothing runs; the model reads the rejection and the reason.`;
  return renderPage(
    `${verb} ${result.callId}`,
    `run ${workflowId}`,
    html`<div class="outcome accepted"><p><span class="code">${verb}</span> call <code>${result.callId}</code> of run <code>${workflowId}</code> at ${result.decidedAt}.</p><p>${detail}</p></div>`,
  );
}

/** The page after a resolution the run acted on. */
export function renderResolution(workflowId: string, result: ResolveOutcomeResult): string {
  const next = resolutionNextStep(result);
  return renderPage(
    `Resolved ${result.callId}`,
    `run ${workflowId}`,
    html`<div class="outcome accepted"><p><span class="code">${result.resolution}</span>: call <code>${result.callId}</code> of run <code>${workflowId}</code> is now ${result.status}${next === null ? null : `; ${next}`}.</p></div>`,
  );
}

/**
 * A refusal page: `code` (the run's refusal type or the console's), `message`, and `hint`: what
 * it means for the person (whether anything was sent or ran).
 */
export function renderRefusal(title: string, code: string, message: string, hint: string): string {
  return renderPage(title, code, html`<div class="outcome refused" role="alert"><p><span class="code">${code}</span></p><p class="message">${message}</p><p>${hint}</p></div>`);
}
