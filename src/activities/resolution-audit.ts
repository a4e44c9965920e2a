/**
 * The audit a person's resolution of an unknown outcome leaves in the checkpoint: who resolved the
 * call, why, when, from which status and under which claim. It is stored in the result payload as
 * its `resolvedInStore` member, so the record keeps it as long as it keeps the result; the fence
 * delivers only `output` (or `error`), so neither the model nor a workflow reads it as the result.
 * Written by `agentWorkflow`'s `resolveToolCall` and by `resolveCallInStore` alike.
 */
import type { ToolOutcome } from './contract';

/** Who resolved a call, why and when (see the module comment). */
export interface ResolutionAudit {
  readonly kind: 'applied' | 'not-applied';
  /** Who decided, as the decision named them (1 to 256 characters); null when it named no one. */
  readonly by: string | null;
  readonly reason: string;
  /** ISO-8601 UTC; the record's `updatedAt` after the resolution. */
  readonly at: string;
  /** The status the person resolved from. */
  readonly fromStatus: 'executing' | 'uncertain';
  /** The fence the result was stored under (the claim that never finished). */
  readonly attemptId: string;
}

/** `outcome` with its audit, as stored. */
export function withResolutionAudit<T extends ToolOutcome>(outcome: T, audit: ResolutionAudit): T & { readonly resolvedInStore: ResolutionAudit } {
  return { ...outcome, resolvedInStore: audit };
}

/** A stored payload without its audit: the tool outcome a workflow receives (the run keeps who decided in its own `decisions`). */
export function withoutResolutionAudit<T extends ToolOutcome>(stored: T & { readonly resolvedInStore?: unknown }): T {
  if (!Object.hasOwn(stored, 'resolvedInStore')) return stored;
  const { resolvedInStore: _audit, ...outcome } = stored;
  return outcome as unknown as T;
}
