/**
 * The contract between the agent workflow and the fenced tool activity: input, result and
 * failure types. Type-only and sandbox-safe: workflow code imports this file.
 */
import type { JsonValue } from '../checkpoint/types';

/** Input of one `runFencedTool` activity: one tool call the model asked for. */
export interface FencedToolInput {
  /** Tenant within the Temporal namespace; the binding's namespace is `<temporal namespace>/<tenant>`. */
  readonly tenant: string;
  /** The model's tool-call id; the binding's call id is `<workflow id>/<this>`. */
  readonly callId: string;
  readonly toolName: string;
  /** The tool's arguments as the model gave them; validated against the tool's schema first. */
  readonly input: JsonValue;
}

/** How the activity obtained the result it returns. */
export const RESULT_SOURCES = ['executed', 'store', 'lookup', 'same-key-repeat'] as const;
export type ResultSource = (typeof RESULT_SOURCES)[number];

/**
 * The payload stored in the checkpoint and redelivered byte for byte: a success with the
 * tool's output (and the provider's receipt, if any) or a handler error the model should see.
 */
export type ToolOutcome =
  | { readonly ok: true; readonly output: JsonValue; readonly receipt: JsonValue }
  | { readonly ok: false; readonly error: { readonly type: string; readonly message: string } };

/** Result of one `runFencedTool` activity. */
export interface FencedToolResult {
  readonly callId: string;
  readonly toolName: string;
  readonly toolRevision: string;
  readonly source: ResultSource;
  readonly outcome: ToolOutcome;
  readonly idempotencyKey: string;
  readonly intentDigest: string;
}
