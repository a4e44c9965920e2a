/**
 * A failed run's cause chain as an operator reads it ("The command line"): what
 * `handle.result()` rejected with, one link per error from the outermost (`WorkflowFailedError`)
 * to the innermost, each with Temporal's failure class, its type (an `ApplicationFailure`'s type
 * is our error code, e.g. NOT_PINNED), its message and, when known, what it concerns: the
 * activity of an `ActivityFailure` (`runModelTurn`, `describeToolCall`, a tool's own activity)
 * with its id and worker, and the call id, tool name or field named by an `ApplicationFailure`'s
 * details. `start --wait` and `show` print it. Text only: the caller prints it through
 * `terminal-safe.ts` (messages and details quote model and provider text).
 */
import { ActivityFailure, ApplicationFailure, ChildWorkflowFailure, TimeoutFailure } from '@temporalio/client';

/** Links followed at most (a cycle or a very deep chain stops here). */
const MAX_LINKS = 8;
/** A link's details are cut to this many characters of JSON. */
const MAX_DETAILS_CHARS = 500;

/** One error of a failed run's cause chain. */
export interface FailureLink {
  /** Temporal's class of the error: `WorkflowFailedError`, `ActivityFailure`, `ApplicationFailure`, `TimeoutFailure`, `TerminatedFailure`, `CancelledFailure`, … */
  readonly kind: string;
  /** An `ApplicationFailure`'s type (our error code, e.g. `NOT_PINNED`) or a `TimeoutFailure`'s timeout type; else null. */
  readonly type: string | null;
  readonly message: string;
  /**
   * What the failure concerns, when known: `activity runModelTurn, activity id 1, worker w-1`
   * for an `ActivityFailure`, `call toolu_1, tool create_ticket, field tools` from an
   * `ApplicationFailure`'s details, `child workflow <type> <id>`; else null.
   */
  readonly concerns: string | null;
  /** `non-retryable` / `retryable` for an `ApplicationFailure`, `retry state <state>` for an `ActivityFailure`; else null. */
  readonly retry: string | null;
  /** An `ApplicationFailure`'s details as JSON text (at most 500 characters), less what `concerns` shows; else null. */
  readonly details: string | null;
}

/**
 * The chain of `error` and its causes, outermost first. A cause repeating the message of the
 * error before it (an `ApplicationFailure` carries the `CheckpointError` it was made from as its
 * cause) adds nothing and is left out. Total: never throws.
 */
export function failureChainOf(error: unknown): FailureLink[] {
  const links: FailureLink[] = [];
  const seen = new Set<unknown>();
  for (let e: unknown = error; e !== undefined && e !== null && !seen.has(e) && links.length < MAX_LINKS; e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    const link = linkOf(e);
    const previous = links[links.length - 1];
    if (previous === undefined || link.message !== previous.message || (link.type !== null && link.type !== previous.type)) links.push(link);
    if (typeof e !== 'object') break;
  }
  return links;
}

/**
 * The chain as lines, each cause indented under the error it caused, e.g.
 * `WorkflowFailedError: Workflow execution failed; caused by:` /
 * `  ActivityFailure [activity runModelTurn, activity id 1; retry state NON_RETRYABLE_FAILURE]: Activity task failed; caused by:` /
 * `    ApplicationFailure NOT_PINNED [field tools; non-retryable]: NOT_PINNED: …`.
 *
 * @param indent spaces before the first line (each cause adds two).
 */
export function failureChainLines(chain: readonly FailureLink[], indent = 0): string[] {
  return chain.map((link, i) => {
    const facts = [link.concerns, link.retry, link.details === null ? null : `details ${link.details}`].filter((f): f is string => f !== null);
    const head = `${link.kind}${link.type === null ? '' : ` ${link.type}`}${facts.length === 0 ? '' : ` [${facts.join('; ')}]`}`;
    return `${' '.repeat(indent + 2 * i)}${head}: ${link.message}${i < chain.length - 1 ? '; caused by:' : ''}`;
  });
}

function linkOf(e: unknown): FailureLink {
  if (!(e instanceof Error)) return { kind: 'Error', type: null, message: String(e), concerns: null, retry: null, details: null };
  const base = { kind: e.name, type: null, message: e.message, concerns: null, retry: null, details: null };
  if (e instanceof ActivityFailure) {
    const where = [`activity ${e.activityType}`, e.activityId === undefined ? null : `activity id ${e.activityId}`, e.identity ? `worker ${e.identity}` : null];
    return { ...base, concerns: where.filter((w) => w !== null).join(', '), retry: e.retryState ? `retry state ${e.retryState}` : null };
  }
  if (e instanceof ApplicationFailure) {
    const details = e.details?.length ? e.details : null;
    const rest = details === null ? null : details.length === 1 ? withoutConcerns(details[0]) : details;
    return {
      ...base,
      type: e.type ?? null,
      concerns: concernsOf(details?.[0]),
      retry: e.nonRetryable ? 'non-retryable' : 'retryable',
      details: rest === null ? null : clip(JSON.stringify(rest) ?? String(rest)),
    };
  }
  if (e instanceof TimeoutFailure) return { ...base, type: e.timeoutType ?? null };
  if (e instanceof ChildWorkflowFailure)
    return { ...base, concerns: `child workflow ${e.workflowType} ${e.execution.workflowId}`, retry: e.retryState ? `retry state ${e.retryState}` : null };
  return base;
}

/** The keys of our errors' details (`CheckpointError.details`) that say what a failure concerns, with their labels. */
const CONCERNS = { callId: 'call', toolName: 'tool', field: 'field' } as const;

/** `call <id>, tool <name>, field <field>` from a failure's first detail, or null. */
function concernsOf(detail: unknown): string | null {
  if (typeof detail !== 'object' || detail === null) return null;
  const d = detail as Record<string, unknown>;
  const parts = (Object.keys(CONCERNS) as (keyof typeof CONCERNS)[]).filter((k) => typeof d[k] === 'string').map((k) => `${CONCERNS[k]} ${d[k] as string}`);
  return parts.length === 0 ? null : parts.join(', ');
}

/** A detail without the keys {@link concernsOf} shows; null when nothing is left. */
function withoutConcerns(detail: unknown): unknown {
  if (typeof detail !== 'object' || detail === null || Array.isArray(detail)) return detail;
  const rest = Object.fromEntries(Object.entries(detail).filter(([k, v]) => !(k in CONCERNS && typeof v === 'string')));
  return Object.keys(rest).length === 0 ? null : rest;
}

function clip(text: string): string {
  return text.length <= MAX_DETAILS_CHARS ? text : `${text.slice(0, MAX_DETAILS_CHARS)}… (${text.length} characters)`;
}
