/**
 * The one error family of the project (docs/protocol.md#errors). Codes are stable: never renamed,
 * adding one is a reviewed change. Sandbox-safe: workflow code may import this file.
 */

/** Every error code, with whether a retry of the same operation can succeed. */
export const CHECKPOINT_ERROR_CODES = {
  /** The stored record's binding differs from the caller's in some field (never a cache hit). */
  BINDING_CONFLICT: { retryable: false },
  /** A stale attempt or delivery tried to finish a claim that another fence owns. */
  FENCE_CONFLICT: { retryable: false },
  /** A record failed validation or strict parsing; it is quarantined, never reset. */
  INVALID_CHECKPOINT: { retryable: false },
  /** A record's seal does not verify, is missing, or names an unknown key. */
  INTEGRITY_FAILURE: { retryable: false },
  /** A record's schema version is not one this code reads or migrates. */
  UNSUPPORTED_SCHEMA: { retryable: false },
  /** The transition is not allowed from the record's status. */
  INVALID_TRANSITION: { retryable: false },
  /** A payload exceeds a bound: bytes, nesting depth or number of values. */
  PAYLOAD_TOO_LARGE: { retryable: false },
  /** A value is not JSON: NaN, ±Infinity, undefined, function, symbol, bigint, cycle, hole, … */
  NOT_JSON: { retryable: false },
  /** A configuration value (file or environment) is missing or malformed; details name the key. */
  INVALID_CONFIG: { retryable: false },
  /** An argument is missing, empty, too long or malformed. */
  INVALID_ARGUMENT: { retryable: false },
  /** The side store could not be reached; nothing was claimed or executed (fail closed). */
  STORE_UNAVAILABLE: { retryable: true },
  /** A store write was sent but its outcome is unknown, and a re-read could not settle it. */
  STORE_OUTCOME_UNKNOWN: { retryable: true },
  /** The Temporal server could not be reached at the configured address (client or worker start). */
  TEMPORAL_UNAVAILABLE: { retryable: true },
  /** An encrypted payload cannot be decrypted (missing key id or wrong key). */
  DECRYPTION_FAILED: { retryable: false },
  /** Tool input failed the tool's input schema; nothing was written or run. */
  INVALID_TOOL_INPUT: { retryable: false },
  /** The model asked for a tool (or revision) the worker does not have. */
  UNKNOWN_TOOL: { retryable: false },
  /** The external outcome of a call is unknown and cannot be looked up: the run pauses for a person. */
  OUTCOME_UNKNOWN: { retryable: false },
  /** A transient tool failure (rate limit, 5xx, reset before sending): retry with the same idempotency key. */
  TOOL_TRANSIENT: { retryable: true },
  /** The provider refused the call for good (validation, permission, business rule, key reused with another body). */
  TOOL_REJECTED: { retryable: false },
  /**
   * The intent digest a person approved differs from the one this worker computes for the call
   * (the tool's revision, arguments or target changed between approval and execution). Raised
   * before any checkpoint write; nothing ran.
   */
  APPROVAL_MISMATCH: { retryable: false },
  /**
   * The call's approval expired before this attempt could claim it (`approvalExpiresAt` in the
   * activity input); raised before any claim, nothing ran.
   */
  APPROVAL_EXPIRED: { retryable: false },
  /**
   * The worker is pinned and the input names a tenant or tool it does not
   * serve, or a model turn offers such a tool (`details.field`: `tenant`, `toolName`, `tools`).
   * Raised before any checkpoint write; nothing ran.
   */
  NOT_PINNED: { retryable: false },
  /**
   * The worker requires approval for this tool (`requireApproval`) and the call
   * carries no approved intent digest. Raised before any checkpoint write; nothing ran.
   */
  APPROVAL_REQUIRED: { retryable: false },
  /**
   * A tool call's business key is held, within its window, by a call with other arguments or
   * under another tool revision: nothing ran (`details` name the first call's workflow, run chain
   * and call id: docs/protocol.md#business-keys).
   */
  IDEMPOTENCY_CONFLICT: { retryable: false },
  /**
   * The call may have been claimed and cannot be settled by this attempt: its outcome is unknown
   * and the tool can reconcile (the checkpoint is marked uncertain), an earlier claim cannot be
   * taken over yet (its holder's request may still be outstanding; `details.retryAfterMs` is
   * the time left), a competitor won the claim, or the store failed after a claim. The next
   * attempt reads the checkpoint and decides again, under the same idempotency key. Never
   * "failed, safe to resend": if the retries run out, the run pauses for a person
   * (docs/protocol.md#nothing-applied).
   */
  RECONCILE_PENDING: { retryable: true },
  /**
   * A conversation-log entry (claim check) already holds another value than the one
   * being written at the same (log, key), or a value read by reference does not match its
   * reference's bytes or digest. Nothing of the refused write was stored.
   */
  CONVERSATION_CONFLICT: { retryable: false },
  /** A compensation was asked for a call whose checkpoint holds no applied effect (absent, unfinished, or its outcome is an error): nothing ran. */
  NOTHING_TO_COMPENSATE: { retryable: false },
  /** A conversation-log entry that must exist (a message index or an output reference) is not in the store. */
  CONVERSATION_ENTRY_MISSING: { retryable: false },
  /**
   * A reset run of an agent chain reset a run that had continued as new (not the chain's latest):
   * the discarded runs' effects cannot all be matched to the reset run's calls, so its model turn
   * is refused before the model is asked and nothing new runs (docs/protocol.md#resets).
   */
  RESET_OF_CONTINUED_RUN: { retryable: false },
  /**
   * An agent tool call its run built before a reset discarded that run was dispatched again in the
   * reset run (Temporal dispatches an activity still scheduled at the reset point again) before any
   * attempt claimed it: it is refused, its refusal stored as the call's result, and nothing ran; the
   * model may ask again in the reset run (docs/protocol.md#resets).
   */
  DISCARDED_BY_RESET: { retryable: false },
  // Model side (transcripts, scripted model, provider SDK adapters). Tool-input problems in a
  // model response are INVALID_TOOL_INPUT, which the tool side already owns.
  /** A transcript file or value does not match the transcript format (details name the path). */
  INVALID_TRANSCRIPT: { retryable: false },
  /** The scripted model was asked for a turn its transcript does not have. */
  SCRIPT_EXHAUSTED: { retryable: false },
  /** `ModelTurnInput.modelOptions` is malformed or names an unknown transcript. */
  INVALID_MODEL_OPTIONS: { retryable: false },
  /** `ModelTurnInput.model` names an adapter the worker does not have. */
  UNKNOWN_MODEL: { retryable: false },
  /** The turn offers a tool the adapter has no JSON schema for (see `ToolSpecs`). */
  MISSING_TOOL_SPEC: { retryable: false },
  /** A provider answered 2xx with a body that is not a usable response. */
  MODEL_RESPONSE_INVALID: { retryable: false },
  /** Rate limit, overload, 5xx, timeout or connection failure after the SDK's own retries (`details.retryAfterMs` when the provider sent Retry-After). */
  MODEL_TRANSIENT: { retryable: true },
  /** The provider refused the request for good (400, 401, 403, 404, 413, 422, …). */
  MODEL_REJECTED: { retryable: false },
} as const;

/** A stable error code. */
export type CheckpointErrorCode = keyof typeof CHECKPOINT_ERROR_CODES;

/** JSON-safe facts about an error (`field`, `limit`, `actual`, `fromStatus`, …). */
/** Details of a {@link CheckpointError}: flat values, or one level of them (`item` of a batch item: key, generation, index, total, idempotency key). */
export type CheckpointErrorDetails = Readonly<Record<string, string | number | boolean | null | readonly string[] | Readonly<Record<string, string | number>>>>;

/**
 * The error every layer throws. `message` starts with the code and names the thing.
 * Identify it with {@link isCheckpointError}, not `instanceof` (which breaks across realms).
 */
export class CheckpointError extends Error {
  override readonly name = 'CheckpointError';
  readonly code: CheckpointErrorCode;
  readonly details: CheckpointErrorDetails;

  constructor(code: CheckpointErrorCode, message: string, details: CheckpointErrorDetails = {}, options?: { cause?: unknown }) {
    super(`${code}: ${message}`, options);
    this.code = code;
    this.details = details;
  }

  /** Whether retrying the same operation may succeed (from {@link CHECKPOINT_ERROR_CODES}). */
  get retryable(): boolean {
    return CHECKPOINT_ERROR_CODES[this.code].retryable;
  }
}

/**
 * True when `value` is a {@link CheckpointError} (by `name` and a known `code`), optionally
 * of the given code. Works across realms and module copies.
 */
export function isCheckpointError(value: unknown, code?: CheckpointErrorCode): value is CheckpointError {
  if (typeof value !== 'object' || value === null) return false;
  const { name, code: actual } = value as { name?: unknown; code?: unknown };
  if (name !== 'CheckpointError' || typeof actual !== 'string' || !(actual in CHECKPOINT_ERROR_CODES)) return false;
  return code === undefined || actual === code;
}
