/**
 * The console's forms as update requests. Each form carries what the page showed (hidden fields):
 * an approval carries the intent digest and the state version the person saw, never ones read
 * again at submit time, so the run refuses a page that is out of date (APPROVAL_MISMATCH,
 * STALE_STATE_VERSION) and nothing runs. Pure.
 */
import { CheckpointError } from '../checkpoint/errors';
import type { JsonValue } from '../checkpoint/types';
import type { ApproveCallRequest, RejectCallRequest, ResolveOutcomeRequest } from '../workflows/types';

/** A decision on one call of one run. */
export interface CallDecision<R> {
  readonly workflowId: string;
  readonly request: R;
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
  const stateVersionText = text(form, 'stateVersion');
  const stateVersion = Number(stateVersionText);
  if (!/^\d+$/.test(stateVersionText) || !Number.isSafeInteger(stateVersion)) {
    throw new CheckpointError('INVALID_ARGUMENT', `stateVersion must be a non-negative integer, got ${JSON.stringify(stateVersionText)}`, { field: 'stateVersion' });
  }
  return { workflowId: text(form, 'workflowId'), request: { callId: text(form, 'callId'), intentDigest: text(form, 'intentDigest'), stateVersion } };
}

/**
 * The reject form: `workflowId`, `callId`, `reason` (non-empty; the model reads it).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field that is missing or empty.
 */
export function parseRejectForm(body: unknown): CallDecision<RejectCallRequest> {
  const form = fields(body);
  return { workflowId: text(form, 'workflowId'), request: { callId: text(form, 'callId'), reason: text(form, 'reason') } };
}

/**
 * The resolve form: `workflowId`, `callId`, `resolution` (`applied` / `absent` / `abandon`, the
 * button pressed), `reason`; with `applied`, `result` (the tool's exact output, JSON) and an
 * optional `receipt` (JSON; empty is none).
 *
 * @throws {@link CheckpointError} INVALID_ARGUMENT naming the field that is missing, empty, not
 *   JSON, or not one of the resolutions.
 */
export function parseResolveForm(body: unknown): CallDecision<ResolveOutcomeRequest> {
  const form = fields(body);
  const workflowId = text(form, 'workflowId');
  const callId = text(form, 'callId');
  const resolution = text(form, 'resolution');
  const reason = text(form, 'reason');
  if (resolution === 'absent' || resolution === 'abandon') return { workflowId, request: { callId, resolution, reason } };
  if (resolution !== 'applied') throw new CheckpointError('INVALID_ARGUMENT', `resolution must be applied, absent or abandon, got ${JSON.stringify(resolution)}`, { field: 'resolution' });
  const receiptText = optional(form, 'receipt');
  return {
    workflowId,
    request: { callId, resolution, result: json(text(form, 'result', Infinity), 'result'), receipt: receiptText === '' ? null : json(receiptText, 'receipt'), reason },
  };
}

type Fields = Readonly<Record<string, unknown>>;

function fields(body: unknown): Fields {
  if (typeof body !== 'object' || body === null) throw new CheckpointError('INVALID_ARGUMENT', 'the request has no form fields', { field: 'body' });
  return body as Fields;
}

/** A field's trimmed text, required non-empty. A repeated field is refused (one form sends each once). */
function text(form: Fields, name: string, maxChars = MAX_FIELD_CHARS): string {
  const value = optional(form, name);
  if (value === '') throw new CheckpointError('INVALID_ARGUMENT', `the form field ${name} is required`, { field: name });
  if (value.length > maxChars) throw new CheckpointError('INVALID_ARGUMENT', `the form field ${name} is ${value.length} characters; at most ${maxChars}`, { field: name, limit: maxChars, actual: value.length });
  return value;
}

function optional(form: Fields, name: string): string {
  const value = form[name];
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new CheckpointError('INVALID_ARGUMENT', `the form field ${name} must be sent once`, { field: name });
  return value.trim();
}

function json(value: string, name: string): JsonValue {
  try {
    return JSON.parse(value) as JsonValue;
  } catch (error) {
    throw new CheckpointError('INVALID_ARGUMENT', `the form field ${name} must be JSON: ${(error as Error).message}`, { field: name });
  }
}
