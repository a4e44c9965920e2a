/**
 * The list of runs waiting for a person: per run its tenant, phase and state version; per call
 * waiting for a decision what the person decides on (tool, revision, the validated arguments that
 * will run, target, intent digest, expiry; for an unknown outcome the evidence: failure type and
 * message, receipt, outcome, idempotency key) and the forms that decide. Every value is escaped
 * (arguments come from a model). Pure.
 */
import { describeError, explainUndecodable } from '../cli/errors';
import { hiddenCharacterWarning } from '../cli/terminal-safe';
import { StatusQueryTimeoutError, type WaitingRun } from '../operator/waiting-runs';
import type { PendingCallView, RunStatusView } from '../workflows/agent/types';
import { describeItem } from '../checkpoint/item-position';
import { formCarriesExactly } from './forms';
import { html, prettyJson, type SafeHtml } from './html';
import { renderPage } from './page';

/** What every form of the page carries besides its own fields. */
export interface FormContext {
  /** The CSRF token for this browser (@fastify/csrf-protection). */
  readonly csrfToken: string;
}

/**
 * The page listing `runs`.
 *
 * @param namespace the Temporal namespace shown in the header.
 * @param nowMs the time expiries are counted from, ms since the epoch.
 */
export function renderWaitingRunsPage(runs: readonly WaitingRun[], namespace: string, form: FormContext, nowMs: number): string {
  const calls = runs.reduce((n, run) => n + ('waiting' in run ? run.waiting.length : 0), 0);
  const body = runs.length === 0 ? html`<p class="note">Nothing needs a person. <a href="/">Reload</a></p>` : html`${runs.map((run) => renderRun(run, form, nowMs))}`;
  return renderPage(
    'Runs waiting for a person',
    `namespace ${namespace} · ${runs.length} run${runs.length === 1 ? '' : 's'}, ${calls} call${calls === 1 ? '' : 's'} waiting · read at ${new Date(nowMs).toISOString()}`,
    body,
  );
}

function renderRun(run: WaitingRun, form: FormContext, nowMs: number): SafeHtml {
  if (!('status' in run) && run.error instanceof StatusQueryTimeoutError) {
    return html`<section class="run" data-workflow-id="${run.workflowId}" data-answer="none"><h2>Run <code>${run.workflowId}</code> <span class="status unanswered">no answer</span></h2><p class="note">The run did not answer its status query within ${seconds(run.error.timeoutMs)}: no worker may be polling its task queue, or its workers are busy. It may be waiting for a person; reload, or check its workers.</p></section>`;
  }
  if (!('status' in run)) {
    const why = explainUndecodable(run.error, 'its status');
    return html`<section class="run" data-workflow-id="${run.workflowId}"><h2>Run <code>${run.workflowId}</code></h2><p class="note">The run did not answer its status query: ${describeError(why)}</p></section>`;
  }
  const { status } = run;
  return html`<section class="run" data-workflow-id="${run.workflowId}">
<h2>Run <code>${run.workflowId}</code></h2>
<p>tenant ${status.tenant ?? '?'} · phase ${status.phase} · state version ${status.stateVersion} · turn ${status.budget.turnsUsed} of ${status.budget.maxTurns} · tool calls ${status.budget.toolCallsUsed} of ${status.budget.maxToolCalls} · deadline ${status.budget.deadlineAt}</p>
${run.waiting.map((call) => renderCall(run.workflowId, status, call, form, nowMs))}
</section>`;
}

function renderCall(workflowId: string, status: RunStatusView, call: PendingCallView, form: FormContext, nowMs: number): SafeHtml {
  const paused = call.status === 'paused';
  return html`<article class="call" data-call-id="${call.callId}">
<h3>${call.toolName} <span class="status ${call.status}">${paused ? 'outcome unknown' : 'awaiting approval'}</span> <code>${call.callId}</code></h3>
<dl>
<dt>Tool</dt><dd>${call.toolName}, revision ${call.toolRevision ?? 'not known yet'}</dd>
<dt>Intent digest</dt><dd><code>${call.intentDigest ?? 'not known yet'}</code></dd>
${call.modelCallId !== call.callId ? html`<dt>Model's call id</dt><dd><code>${call.modelCallId}</code></dd>` : null}
${call.approvalExpiresAt !== null ? html`<dt>Approval expires</dt><dd>${call.approvalExpiresAt} (${relative(call.approvalExpiresAt, nowMs)})</dd>` : null}
${!paused && call.idempotencyKey !== null ? html`<dt>Idempotency key</dt><dd><code>${call.idempotencyKey}</code></dd>` : null}
${paused ? renderEvidence(status, call) : null}
</dl>
<h4>Arguments (validated by the tool's schema; these run)</h4>
${call.arguments === null ? html`<p class="note">Not reported by the worker: what runs may differ from what the model sent.</p>` : html`${hiddenWarning('the arguments', call.arguments)}<pre class="arguments">${prettyJson(call.arguments)}</pre>`}
${call.target !== null ? html`<h4>Target</h4>${hiddenWarning('the target', call.target)}<pre class="target">${prettyJson(call.target)}</pre>` : null}
<h4>What the model sent (shown for reference; not run as sent)</h4>
${hiddenWarning("the model's input", call.modelInput)}<pre class="model-input">${prettyJson(call.modelInput)}</pre>
<div class="decisions">${!formCarriesExactly(workflowId) || !formCarriesExactly(call.callId) ? noForms(workflowId, call) : paused ? resolveForm(workflowId, status, call, form) : approvalForms(workflowId, status, call, form)}</div>
</article>`;
}

/** A flag above a value holding characters shown as escapes (`hiddenCharacterWarning`), else nothing. */
function hiddenWarning(what: string, value: unknown): SafeHtml | null {
  const warning = hiddenCharacterWarning(what, value);
  return warning === null ? null : html`<p class="warning hidden-characters">${warning}</p>`;
}

/**
 * Why the outcome is unknown and what is known of it: the idempotency key and revision the call
 * (or its compensation, or its paused batch item) was claimed under, which a person looks it up by
 * in the provider's log, the failure, the receipt and the outcome.
 */
function renderEvidence(status: RunStatusView, call: PendingCallView): SafeHtml {
  const pausedAt = status.paused?.callId === call.callId ? status.paused.pausedAt : null;
  const compensation = call.role === 'compensation' ? (call.compensation ?? null) : null;
  const key = compensation !== null ? compensation.idempotencyKey : call.idempotencyKey;
  return html`${status.paused?.callId === call.callId ? html`<dt>Pause</dt><dd><code>${status.paused.pauseId}</code></dd>` : null}<dt>Idempotency key</dt><dd>${key === null ? 'not reported by the worker' : html`<code>${key}</code>`}</dd>
${compensation !== null ? html`<dt>Compensation</dt><dd>${compensation.toolName ?? 'not known yet'}, revision ${compensation.toolRevision ?? 'not reported'}, generation ${compensation.generation}</dd>` : null}
${call.item !== undefined ? html`<dt>Batch item</dt><dd>${describeItem(call.item)}, item key ${call.item.idempotencyKey === null ? 'not reported' : html`<code>${call.item.idempotencyKey}</code>`}</dd>` : null}
<dt>Failure</dt><dd><code>${call.errorType ?? 'UNCLASSIFIED'}</code></dd>
<dt>Reason</dt><dd>${call.reason ?? ''}</dd>
${pausedAt !== null ? html`<dt>Paused at</dt><dd>${pausedAt}</dd>` : null}
<dt>Receipt</dt><dd>${call.receipt === null ? 'none' : html`<pre>${prettyJson(call.receipt)}</pre>`}</dd>
<dt>Outcome</dt><dd>${call.outcome === null ? 'none recorded' : html`<pre>${prettyJson(call.outcome)}</pre>`}</dd>`;
}

/** The call's identity as hidden fields (attribute values: only HTML-escaped, so they come back exactly). */
function hidden(workflowId: string, callId: string, form: FormContext): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${form.csrfToken}"><input type="hidden" name="workflowId" value="${workflowId}"><input type="hidden" name="callId" value="${callId}">`;
}

/**
 * The intent digest the page shows, sent back with a reject or resolve so it decides only that
 * intent ('' when none is shown); checked by the console, not sent to the run (an approval's own
 * `intentDigest` is), hence its own name.
 */
function shownDigest(call: PendingCallView): SafeHtml {
  return html`<input type="hidden" name="shownIntentDigest" value="${call.intentDigest ?? ''}">`;
}

/** Instead of forms, for a run or call whose id a browser would not send back exactly (a line break, NUL, a lone surrogate). */
function noForms(workflowId: string, call: PendingCallView): SafeHtml {
  const command = call.status === 'paused' ? 'ttc resolve' : 'ttc approve / ttc reject';
  return html`<p class="note">The ${formCarriesExactly(workflowId) ? 'call id' : 'workflow id'} holds a character a web form cannot send back exactly (a line break, NUL or a lone surrogate), so this page cannot decide the call: use ${command}.</p>`;
}

function approvalForms(workflowId: string, status: RunStatusView, call: PendingCallView, form: FormContext): SafeHtml {
  const approve =
    call.intentDigest === null
      ? html`<p class="note">No intent digest yet: the call cannot be approved until a worker has described it.</p>`
      : html`<form method="post" action="/approve" class="approve">${hidden(workflowId, call.callId, form)}<input type="hidden" name="intentDigest" value="${call.intentDigest}"><input type="hidden" name="stateVersion" value="${status.stateVersion}"><button type="submit" class="approve">Approve</button></form>`;
  return html`${approve}<form method="post" action="/reject" class="reject">${hidden(workflowId, call.callId, form)}${shownDigest(call)}<label>Reason (the model reads it) <input type="text" name="reason" required maxlength="4096"></label><button type="submit" class="reject">Reject</button></form>`;
}

function resolveForm(workflowId: string, status: RunStatusView, call: PendingCallView, form: FormContext): SafeHtml {
  if (status.paused?.callId !== call.callId) {
    return html`<p class="note">Waits for its turn: the run is paused on ${status.paused === null ? 'no call yet' : html`<code>${status.paused.callId}</code>`}; resolve that call first.</p>`;
  }
  return html`<form method="post" action="/resolve" class="resolve">${hidden(workflowId, call.callId, form)}${shownDigest(call)}<input type="hidden" name="pauseId" value="${status.paused.pauseId}">
<label>Result, if the effect was applied: the tool's exact output as JSON (the model reads it)<textarea name="result" placeholder='{"id": "…"}'></textarea></label>
<label>Receipt (JSON, optional)<textarea name="receipt"></textarea></label>
<label>Reason (kept for audit) <input type="text" name="reason" required maxlength="4096"></label>
<div class="buttons"><button type="submit" name="resolution" value="applied" class="applied">Applied (with this result)</button><button type="submit" name="resolution" value="absent" class="absent">Absent: run it again</button><button type="submit" name="resolution" value="abandon" class="abandon">Abandon the run</button></div>
</form>`;
}

/** A timeout as a person reads it: `3 s`, `500 ms`. */
function seconds(ms: number): string {
  return ms % 1_000 === 0 ? `${ms / 1_000} s` : `${ms} ms`;
}

/** `in 14 min` / `2 min ago`, to the minute (seconds under a minute). */
function relative(at: string, nowMs: number): string {
  const deltaMs = Date.parse(at) - nowMs;
  const abs = Math.abs(deltaMs);
  const amount = abs < 60_000 ? `${Math.round(abs / 1_000)} s` : abs < 3_600_000 ? `${Math.round(abs / 60_000)} min` : `${(abs / 3_600_000).toFixed(1)} h`;
  return deltaMs >= 0 ? `in ${amount}` : `passed ${amount} ago`;
}
