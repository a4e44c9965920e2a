/**
 * Span attribute names of the fence: the OpenTelemetry semantic conventions it follows, and its own
 * `ttc.*` names. Names only; no values of a call's arguments or results ever go into a span (they
 * may hold secrets); the idempotency key may.
 *
 * @see https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-agent-spans/ (execute tool span, Development)
 * @see https://opentelemetry.io/docs/specs/semconv/database/database-spans/ (stable)
 */

/** GenAI semantic conventions of a tool execution span (`execute_tool {gen_ai.tool.name}`, kind INTERNAL). */
export const GEN_AI = {
  OPERATION_NAME: 'gen_ai.operation.name',
  TOOL_NAME: 'gen_ai.tool.name',
  TOOL_CALL_ID: 'gen_ai.tool.call.id',
  TOOL_TYPE: 'gen_ai.tool.type',
} as const;

/** The value of `gen_ai.operation.name` on the fence's span. */
export const EXECUTE_TOOL = 'execute_tool';

/** `error.type`: the class of error an operation ended with (here the CheckpointError code, or the stored error result's type). */
export const ERROR_TYPE = 'error.type';

/**
 * Database semantic conventions of a store operation span (kind CLIENT). `db.system.name` is the
 * stable name; `db.system` is the name earlier conventions (and many backends' views) use: both are set.
 */
export const DB = {
  SYSTEM_NAME: 'db.system.name',
  SYSTEM: 'db.system',
  OPERATION_NAME: 'db.operation.name',
} as const;

/** Attributes of ours, namespaced `ttc.`. */
export const TTC = {
  /** The call's idempotency key (`ttc2-…` / `ttc3-…`), as the tool sends it to its provider. */
  IDEMPOTENCY_KEY: 'ttc.idempotency_key',
  /** The tool's revision the call is bound to. */
  TOOL_REVISION: 'ttc.tool.revision',
  /** The Temporal activity attempt (1 for the first). */
  ATTEMPT: 'ttc.attempt',
  /** The checkpoint status the deciding round found (`absent` when this attempt's insert created it). */
  STATUS_FOUND: 'ttc.checkpoint.status_found',
  /** The protocol action the deciding round took (docs/protocol.md#statuses-and-actions: execute, reconcile-execution, deliver, reconcile-delivery, none). */
  ACTION: 'ttc.action',
  /** How the attempt obtained its result: executed, store, lookup, same-key-repeat. */
  RESULT_SOURCE: 'ttc.result.source',
  /** Whether the delivered outcome is a success (`{ ok: true }`). */
  RESULT_OK: 'ttc.result.ok',
  /** Set when the delivered outcome was stored by a person (`resolveCallInStore`): `applied` or `not-applied`. */
  RESOLVED_BY_PERSON: 'ttc.result.resolved_by_person',
  /** Who took the person's decision the attempt delivers or runs under (a resolution's or an approval's `by`), when it named someone. */
  DECISION_BY: 'ttc.decision.by',
  /** True when the call ran under a person's approval (the input carries the approved intent digest). */
  APPROVED: 'ttc.call.approved',
  /** The revision of the last checkpoint record the attempt read or wrote. */
  REVISION: 'ttc.checkpoint.revision',
  /** On a compare-and-swap span: whether the record was replaced (false: a conflict, nothing changed). */
  CAS_SWAPPED: 'ttc.cas.swapped',
  /** On a createIfAbsent span: whether the record was inserted (false: one existed and was returned). */
  CREATED: 'ttc.store.created',
} as const;
