/**
 * Errors of the model side (transcripts, scripted model, provider SDK adapters). Tool-input
 * problems in a model response (OpenAI arguments that are not JSON, an input that is not an
 * object) are reported as `CheckpointError('INVALID_TOOL_INPUT')` instead, because the tool
 * side already owns that code. Sandbox-safe: no Node imports.
 */

/** Every model error code, with whether a retry of the same turn can succeed. */
export const MODEL_ERROR_CODES = {
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
  /** Rate limit, overload, 5xx, timeout or connection failure after the SDK's own retries. */
  MODEL_TRANSIENT: { retryable: true },
  /** The provider refused the request for good (400, 401, 403, 404, 413, 422, …). */
  MODEL_REJECTED: { retryable: false },
} as const;

/** A stable model error code. */
export type ModelErrorCode = keyof typeof MODEL_ERROR_CODES;

/** JSON-safe facts about a model error (`transcript`, `turn`, `status`, `path`, …). */
export type ModelErrorDetails = Readonly<Record<string, string | number | boolean | null>>;

/** Which adapter family raised an error. */
export type ModelProvider = 'anthropic' | 'openai' | 'scripted';

/**
 * The error model adapters throw. `message` starts with the code. Identify it with
 * {@link isModelError} (works across realms), not `instanceof`.
 */
export class ModelError extends Error {
  override readonly name = 'ModelError';
  readonly code: ModelErrorCode;
  readonly details: ModelErrorDetails;
  /** For `MODEL_TRANSIENT`: how long the provider asked us to wait (Retry-After), if it did. */
  readonly retryAfterMs: number | null;

  constructor(
    code: ModelErrorCode,
    message: string,
    details: ModelErrorDetails = {},
    options?: { cause?: unknown; retryAfterMs?: number | null },
  ) {
    super(`${code}: ${message}`, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = details;
    this.retryAfterMs = options?.retryAfterMs ?? null;
  }

  /** Whether retrying the same turn may succeed (from {@link MODEL_ERROR_CODES}). */
  get retryable(): boolean {
    return MODEL_ERROR_CODES[this.code].retryable;
  }
}

/** True when `value` is a {@link ModelError} (by `name` and a known `code`), optionally of `code`. */
export function isModelError(value: unknown, code?: ModelErrorCode): value is ModelError {
  if (typeof value !== 'object' || value === null) return false;
  const { name, code: actual } = value as { name?: unknown; code?: unknown };
  if (name !== 'ModelError' || typeof actual !== 'string' || !(actual in MODEL_ERROR_CODES)) return false;
  return code === undefined || actual === code;
}
