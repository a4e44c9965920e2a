/**
 * The console's forms as update requests. Each form carries what the page showed (hidden fields):
 * an approval carries the intent digest and the state version the person saw, never ones read
 * again at submit time, so the run refuses a page that is out of date (APPROVAL_MISMATCH,
 * STALE_STATE_VERSION) and nothing runs; a reject or a resolution carries the intent digest the
 * page showed, checked against the call before anything is sent (see operations.ts).
 *
 * The hidden fields (ids, digest, state version) and the button's value are taken exactly as sent:
 * never trimmed or otherwise normalised, since `pay`, `pay ` and `pay\u200b` are three calls. Only
 * what the person typed (a reason, a result, a receipt) is trimmed. Pure.
 */
import { CheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';
import type { ApproveCallRequest, RejectCallRequest, ResolveOutcomeRequest } from '../workflows/agent/types';

/** A decision on one call of one run. */
export interface CallDecision<R> {
  readonly workflowId: string;
  readonly request: R;
}

/** A reject or a resolution, with the intent digest the page showed for the call (null: it showed none). */
export interface BoundCallDecision<R> extends CallDecision<R> {
  readonly shownIntentDigest: string | null;
}

/**
 * True when a browser submits `text` from a hidden form field exactly as written: no CR or LF (a
 * page's line breaks are normalised when it is parsed and again when a form is sent), no NUL (read
 * as U+FFFD) and no lone surrogate (not encodable as UTF-8). A call or run whose id fails this gets
 * no forms in the console (see render-runs.ts): it is decided with the command line. Pure.
 */
export function formCarriesExactly(text: string): boolean {
  return !/[\r\n\0]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(text);
}

/** Longest value of a one-line field (ids, digests, reasons), in characters. */
const MAX_FIELD_CHARS = 4_096;

/**
 * The approve form: `workflowId`, `callId`, `intentDigest`, `stateVersion` (a non-negative integer).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field that is missing or malformed.
 */
export function parseApproveForm(body: unknown): CallDecision<ApproveCallRequest> {
  const form = fields(body);
  const stateVersionText = exact(form, 'stateVersion');
  const stateVersion = Number(stateVersionText);
  if (!/^\d+$/.test(stateVersionText) || !Number.isSafeInteger(stateVersion)) {
    throw new CheckpointError('INVALID_ARGUMENT', `stateVersion must be a non-negative integer, got ${JSON.stringify(stateVersionText)}`, { field: 'stateVersion' });
  }
  return { workflowId: exact(form, 'workflowId'), request: { callId: exact(form, 'callId'), intentDigest: exact(form, 'intentDigest'), stateVersion } };
}

/**
 * The reject form: `workflowId`, `callId`, `shownIntentDigest` (the one the page showed; empty or
 * absent: none), `reason` (non-empty; the model reads it).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field that is missing or empty.
 */
export function parseRejectForm(body: unknown): BoundCallDecision<RejectCallRequest> {
  const form = fields(body);
  return { workflowId: exact(form, 'workflowId'), request: { callId: exact(form, 'callId'), reason: text(form, 'reason') }, shownIntentDigest: shownDigest(form) };
}

/**
 * The resolve form: `workflowId`, `callId`, `shownIntentDigest` (the one the page showed; empty or
 * absent: none), `resolution` (`applied` / `absent` / `abandon`, the button pressed), `reason`;
 * with `applied`, `result` (the tool's exact output, JSON) and an optional `receipt` (JSON; empty
 * is none).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field that is missing, empty, not
 *   JSON, or not one of the resolutions.
 */
export function parseResolveForm(body: unknown): BoundCallDecision<ResolveOutcomeRequest> {
  const form = fields(body);
  const workflowId = exact(form, 'workflowId');
  const callId = exact(form, 'callId');
  // The pause the page showed: the run refuses a decision about any other (STALE_PAUSE).
  const pauseId = exact(form, 'pauseId');
  const shownIntentDigest = shownDigest(form);
  const resolution = exact(form, 'resolution');
  const reason = text(form, 'reason');
  if (resolution === 'absent' || resolution === 'abandon') return { workflowId, request: { callId, pauseId, resolution, reason }, shownIntentDigest };
  if (resolution !== 'applied')
    throw new CheckpointError('INVALID_ARGUMENT', `resolution must be applied, absent or abandon, got ${JSON.stringify(resolution)}`, { field: 'resolution' });
  const receiptText = optional(form, 'receipt').trim();
  return {
    workflowId,
    request: { callId, pauseId, resolution, result: json(text(form, 'result', Infinity), 'result'), receipt: receiptText === '' ? null : json(receiptText, 'receipt'), reason },
    shownIntentDigest,
  };
}

type Fields = Readonly<Record<string, unknown>>;

function fields(body: unknown): Fields {
  if (typeof body !== 'object' || body === null) throw new CheckpointError('INVALID_ARGUMENT', 'the request has no form fields', { field: 'body' });
  return body as Fields;
}

/** What a person typed into a field, trimmed, required non-empty. */
function text(form: Fields, name: string, maxChars = MAX_FIELD_CHARS): string {
  return required(name, optional(form, name).trim(), maxChars);
}

/** A field the page wrote (a hidden field, a button's value), exactly as sent, required non-empty. */
function exact(form: Fields, name: string): string {
  return required(name, optional(form, name), MAX_FIELD_CHARS);
}

/** The `shownIntentDigest` field of a reject or resolve form, exactly as sent; empty or absent: the page showed none. */
function shownDigest(form: Fields): string | null {
  const value = optional(form, 'shownIntentDigest');
  return value === '' ? null : required('shownIntentDigest', value, MAX_FIELD_CHARS);
}

function required(name: string, value: string, maxChars: number): string {
  if (value === '') throw new CheckpointError('INVALID_ARGUMENT', `the form field ${name} is required`, { field: name });
  if (value.length > maxChars)
    throw new CheckpointError('INVALID_ARGUMENT', `the form field ${name} is ${value.length} characters; at most ${maxChars}`, {
      field: name,
      limit: maxChars,
      actual: value.length,
    });
  return value;
}

/** A field's text as sent ('' when absent). A repeated field is refused (one form sends each once). */
function optional(form: Fields, name: string): string {
  const value = form[name];
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new CheckpointError('INVALID_ARGUMENT', `the form field ${name} must be sent once`, { field: name });
  return value;
}

function json(value: string, name: string): JsonValue {
  try {
    return JSON.parse(value) as JsonValue;
  } catch (error) {
    throw new CheckpointError('INVALID_ARGUMENT', `the form field ${name} must be JSON: ${(error as Error).message}`, { field: name });
  }
}
